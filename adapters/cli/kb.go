package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/knowledge"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

const kbAbout = `
Manages knowledge bases, which the agent searches with search_knowledge.

  add NAME --type local --dir DIR [--chunk-size N] [--chunk-overlap N]
                          a local knowledge base over DIR's Markdown and text
                          files, ingested at once into SQLite full-text search
  add NAME --type dify --endpoint URL --knowledge-id ID [--score-threshold F]
          --secret-env VAR
                          a Dify External Knowledge API (also served by RAGFlow
                          and others); the API key is read from the environment
                          variable VAR and stored apart from the configuration
  list                    knowledge bases, their type and state (never secrets)
  ingest NAME [DIR]       re-ingest a local knowledge base; only files whose
                          content changed are re-indexed
  search QUERY [--kb NAME] [--top-k N]
                          search one knowledge base, or every enabled one
  remove NAME             delete a knowledge base, its secret and its index

Add --description to say what a knowledge base holds: the model reads it.
A running "nagent serve" sees added or removed knowledge bases within seconds.
Every subcommand takes --json for scripts.`

var kbSynopsis = map[string]string{
	"add":    "kb add NAME --type local|dify [flags] [--json]",
	"list":   "kb list [--json]",
	"ingest": "kb ingest NAME [DIR] [--json]",
	"search": "kb search QUERY [--kb NAME] [--top-k N] [--json]",
	"remove": "kb remove NAME [--json]",
}

// KB is `nagent kb add|list|ingest|search|remove`.
func KB(ctx context.Context, args []string, stdio IO) int {
	sub, fset, rest, code, ok := subcommand(stdio, "kb", "kb add|list|ingest|search|remove ...", kbAbout, kbSynopsis, args)
	if !ok {
		return code
	}
	asJSON := fset.Bool("json", false, "print JSON")
	var add struct {
		typ, dir, description, endpoint, knowledgeID, secretEnv, config string
		chunkSize, chunkOverlap                                         int
		threshold                                                       float64
		disabled                                                        bool
	}
	var kbName string
	var topK int
	switch sub {
	case "add":
		fset.StringVar(&add.typ, "type", "", "retriever type: "+strings.Join(knowledge.NewService(nil, nil, nil).Factories.Types(), ", "))
		fset.StringVar(&add.description, "description", "", "what the knowledge base holds, shown to the model")
		fset.StringVar(&add.dir, "dir", "", "local: the directory to ingest")
		fset.IntVar(&add.chunkSize, "chunk-size", 0, fmt.Sprintf("local: characters per chunk (default %d)", knowledge.DefaultChunkSize))
		fset.IntVar(&add.chunkOverlap, "chunk-overlap", 0, fmt.Sprintf("local: characters shared by consecutive chunks (default %d)", knowledge.DefaultChunkOverlap))
		fset.StringVar(&add.endpoint, "endpoint", "", "dify: the API base URL; requests go to {endpoint}/retrieval")
		fset.StringVar(&add.knowledgeID, "knowledge-id", "", "dify: the knowledge_id in the external service")
		fset.Float64Var(&add.threshold, "score-threshold", 0, "dify: drop results scored below this (0 to 1)")
		fset.StringVar(&add.secretEnv, "secret-env", "", "the environment variable holding the API key")
		fset.StringVar(&add.config, "config", "", "the whole configuration as a JSON object, for other types")
		fset.BoolVar(&add.disabled, "disabled", false, "add the knowledge base disabled")
	case "search":
		fset.StringVar(&kbName, "kb", "", "search only this knowledge base")
		fset.IntVar(&topK, "top-k", knowledge.DefaultTopK, "how many passages")
	}
	operands, code, ok := parseInterleaved(fset, rest, stdio)
	if !ok {
		return code
	}
	n := map[string][2]int{"add": {1, 1}, "list": {0, 0}, "ingest": {1, 2}, "search": {1, 1}, "remove": {1, 1}}[sub]
	if len(operands) < n[0] || len(operands) > n[1] {
		fmt.Fprintf(stdio.Err, "nagent kb %s: usage: nagent %s\n", sub, kbSynopsis[sub])
		return ExitUsage
	}
	_, db, err := openStore(ctx)
	if err != nil {
		return Fail(stdio, err)
	}
	defer db.Close()
	svc := knowledge.NewService(db, db, Logger(stdio.Err))

	switch sub {
	case "add":
		err = kbAdd(ctx, db, svc, operands[0], add.typ, add.description, add.dir, add.endpoint, add.knowledgeID,
			add.secretEnv, add.config, add.chunkSize, add.chunkOverlap, add.threshold, !add.disabled, *asJSON, stdio)
	case "list":
		err = kbList(ctx, db, *asJSON, stdio)
	case "ingest":
		var kb *store.KnowledgeBase
		if kb, err = db.GetKnowledgeBase(ctx, operands[0]); err == nil {
			dir := ""
			if len(operands) == 2 {
				dir = operands[1]
			}
			err = kbIngest(ctx, db, kb, dir, *asJSON, stdio)
		}
	case "search":
		err = kbSearch(ctx, svc, kbName, operands[0], topK, *asJSON, stdio)
	case "remove":
		var kb *store.KnowledgeBase
		if kb, err = db.GetKnowledgeBase(ctx, operands[0]); err == nil {
			if err = db.DeleteKnowledgeBase(ctx, kb.ID); err == nil {
				if *asJSON {
					err = writeJSON(stdio.Out, map[string]any{"removed": true, "id": kb.ID, "name": kb.Name})
				} else {
					fmt.Fprintf(stdio.Out, "removed knowledge base %s (%s)\n", kb.Name, kb.ID)
				}
			}
		}
	}
	return Fail(stdio, err)
}

func kbAdd(ctx context.Context, db *store.DB, svc *knowledge.KnowledgeService, name, typ, description, dir, endpoint, knowledgeID,
	secretEnv, rawConfig string, chunkSize, chunkOverlap int, threshold float64, enabled, asJSON bool, stdio IO) error {
	if typ == "" {
		return errs.Errorf(errs.EINVALID, "--type is required: one of %s", strings.Join(svc.Factories.Types(), ", "))
	}
	factory, err := svc.Factories.Get(typ)
	if err != nil {
		return err
	}
	var conf json.RawMessage
	switch {
	case rawConfig != "":
		conf = json.RawMessage(rawConfig)
	case typ == knowledge.TypeLocal:
		if dir == "" {
			return errs.Errorf(errs.EINVALID, "--dir is required for a local knowledge base")
		}
		if dir, err = filepath.Abs(dir); err != nil {
			return err
		}
		conf, _ = json.Marshal(knowledge.LocalConfig{Dir: dir, ChunkSize: chunkSize, ChunkOverlap: chunkOverlap})
	case typ == knowledge.TypeDify:
		conf, _ = json.Marshal(knowledge.DifyConfig{Endpoint: endpoint, KnowledgeID: knowledgeID, ScoreThreshold: threshold})
	default:
		conf = json.RawMessage(`{}`)
	}
	if err := factory.Validate(conf); err != nil {
		return errs.Errorf(errs.Code(err), "knowledge base %s: %s", name, errs.MessageOrError(err))
	}
	var secret string
	if secretEnv != "" {
		if secret = os.Getenv(secretEnv); secret == "" {
			return errs.Errorf(errs.EINVALID, "--secret-env %s: the environment variable is not set", secretEnv)
		}
	}
	if typ == knowledge.TypeDify && secret == "" {
		return errs.Errorf(errs.EINVALID, "a dify knowledge base needs an API key: export it and name the variable with --secret-env")
	}
	kb := &store.KnowledgeBase{Name: name, Type: typ, Description: description, Config: conf, Enabled: enabled}
	if err := db.CreateKnowledgeBase(ctx, kb, secret); err != nil {
		return err
	}
	if typ == knowledge.TypeLocal {
		if !asJSON {
			fmt.Fprintf(stdio.Out, "added knowledge base %s (%s, %s)\n", kb.Name, kb.ID, kb.Type)
		}
		return kbIngest(ctx, db, kb, "", asJSON, stdio)
	}
	if asJSON {
		return writeJSON(stdio.Out, map[string]any{"added": kb})
	}
	fmt.Fprintf(stdio.Out, "added knowledge base %s (%s, %s)\n", kb.Name, kb.ID, kb.Type)
	return nil
}

func kbIngest(ctx context.Context, db *store.DB, kb *store.KnowledgeBase, dir string, asJSON bool, stdio IO) error {
	rep, err := knowledge.Ingest(ctx, db, kb, dir)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdio.Out, map[string]any{"kb_id": kb.ID, "ingest": rep})
	}
	fmt.Fprintf(stdio.Out, "ingested %s into %s: %d added, %d updated, %d unchanged, %d removed, %d chunks written\n",
		rep.Dir, kb.Name, len(rep.Added), len(rep.Updated), rep.Unchanged, len(rep.Removed), rep.Chunks)
	for _, p := range rep.Skipped {
		fmt.Fprintf(stdio.Out, "skipped %s: not UTF-8 text, or larger than 4 MiB\n", p)
	}
	return nil
}

func kbList(ctx context.Context, db *store.DB, asJSON bool, stdio IO) error {
	kbs, err := db.ListKnowledgeBases(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdio.Out, map[string]any{"knowledge_bases": nonNil(kbs)})
	}
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tTYPE\tENABLED\tSECRET\tDOCUMENTS\tDESCRIPTION")
	for _, kb := range kbs {
		docs := "-"
		if kb.Type == knowledge.TypeLocal {
			d, err := db.ListKnowledgeDocuments(ctx, kb.ID)
			if err != nil {
				return err
			}
			docs = fmt.Sprint(len(d))
		}
		secret := "-"
		if kb.HasSecret {
			secret = "stored"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\t%s\n", kb.Name, kb.ID, kb.Type, kb.Enabled, secret, docs, truncate(kb.Description, 50))
	}
	return tw.Flush()
}

func kbSearch(ctx context.Context, svc *knowledge.KnowledgeService, kb, query string, topK int, asJSON bool, stdio IO) error {
	args, _ := json.Marshal(map[string]any{"query": query, "kb_id": kb, "top_k": topK})
	out, err := svc.Execute(ctx, tools.ToolCallRequest{Name: knowledge.ToolName, Arguments: string(args)}, tools.ExecutionContext{})
	if err != nil {
		return err
	}
	if asJSON {
		_, err := fmt.Fprintln(stdio.Out, out)
		return err
	}
	var res struct {
		Results []knowledge.Result `json:"results"`
		Errors  []struct {
			KBName string `json:"kb_name"`
			Error  string `json:"error"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return err
	}
	for _, e := range res.Errors {
		fmt.Fprintf(stdio.Err, "warning: %s\n", e.Error)
	}
	if len(res.Results) == 0 {
		fmt.Fprintln(stdio.Out, "no results")
	}
	for i, r := range res.Results {
		fmt.Fprintf(stdio.Out, "%d. [%.3f] %s: %s — %s\n", i+1, r.Score, r.KBName, r.Title, r.Source)
		fmt.Fprintf(stdio.Out, "   %s\n", truncate(r.Content, 200))
	}
	return nil
}
