package policy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"go.yaml.in/yaml/v3"
)

//go:embed rego/*.rego
var embedded embed.FS

// BuiltinPrefix names the embedded default files in errors and listings
// (builtin/tools.rego).
const BuiltinPrefix = "builtin/"

// Queries the engine prepares.
const (
	toolsQuery  = "data.nagent.tools.decision"
	memoryQuery = "data.nagent.memory.decision"
)

// networkBuiltins are left out of the capabilities policies compile
// against: a decision sits on every tool call, so it must not wait on the
// network.
var networkBuiltins = []string{"http.send", "net.lookup_ip_addr"}

// capabilities are OPA's, without the network built-ins.
var capabilities = func() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	c.Builtins = slices.DeleteFunc(c.Builtins, func(b *ast.Builtin) bool { return slices.Contains(networkBuiltins, b.Name) })
	return c
}()

// source is one policy file: a Rego module or a data document.
type source struct {
	name  string // as shown in errors: builtin/tools.rego, or the file's path
	text  []byte
	data  bool     // data.json / data.yaml
	mount []string // for data: the directory below the root, as a data path
	test  bool     // *_test.rego: compiled by check and test only
}

// Problem is one error in a policy file.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
	}
	if p.Code != "" {
		b.WriteString(p.Code)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// LoadError is a policy set that failed to read, parse or compile. Each
// problem names its file and line.
type LoadError struct {
	Problems []Problem
}

func (e *LoadError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return strings.Join(parts, "; ")
}

// problems converts parse and compile errors into a LoadError.
func problems(err error) *LoadError {
	var le *LoadError
	if errors.As(err, &le) {
		return le
	}
	var astErrs ast.Errors
	if errors.As(err, &astErrs) {
		out := &LoadError{}
		for _, e := range astErrs {
			p := Problem{Code: e.Code, Message: e.Message}
			for _, name := range networkBuiltins {
				if e.Message == "undefined function "+name {
					p.Message += " (network built-ins are not available to N-Agent policies: a decision must not wait on the network)"
				}
			}
			if e.Location != nil {
				p.File, p.Line = e.Location.File, e.Location.Row
			}
			out.Problems = append(out.Problems, p)
		}
		return out
	}
	var astErr *ast.Error
	if errors.As(err, &astErr) {
		return problems(ast.Errors{astErr})
	}
	return &LoadError{Problems: []Problem{{Message: err.Error()}}}
}

// builtinSources returns the embedded defaults.
func builtinSources() []source {
	names, _ := fs.Glob(embedded, "rego/*.rego")
	sort.Strings(names)
	out := make([]source, 0, len(names))
	for _, n := range names {
		text, _ := embedded.ReadFile(n)
		base := path.Base(n)
		out = append(out, source{name: BuiltinPrefix + base, text: text, test: strings.HasSuffix(base, "_test.rego")})
	}
	return out
}

// isDataFile reports whether name is a data document the engine loads.
func isDataFile(name string) bool {
	switch name {
	case "data.json", "data.yaml", "data.yml":
		return true
	}
	return false
}

// readDir reads every *.rego file and data document under dir, in a stable
// order. A missing dir holds no files. Hidden files and directories (an
// editor's swap files) are skipped.
func readDir(dir string) ([]source, error) {
	if dir == "" {
		return nil, nil
	}
	var out []source
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return fs.SkipAll
			}
			return err
		}
		name := d.Name()
		if p != dir && strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !(strings.HasSuffix(name, ".rego") || isDataFile(name)) {
			return nil
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := source{name: p, text: text, test: strings.HasSuffix(name, "_test.rego"), data: isDataFile(name)}
		if s.data {
			rel, _ := filepath.Rel(dir, filepath.Dir(p))
			if rel != "." {
				s.mount = strings.Split(filepath.ToSlash(rel), "/")
			}
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, &LoadError{Problems: []Problem{{File: dir, Message: err.Error()}}}
	}
	return out, nil
}

// revision identifies a set of sources: a hash of their names and contents.
func revision(srcs []source) string {
	h := sha256.New()
	for _, s := range srcs {
		fmt.Fprintf(h, "%s\x00%d\x00", s.name, len(s.text))
		h.Write(s.text)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// parsed is a policy set parsed, with its data merged, not yet compiled.
type parsed struct {
	modules  map[string]*ast.Module
	store    storage.Store
	revision string
	files    []string
}

// compileOptions select what compile checks.
type compileOptions struct {
	tests  bool // include *_test.rego files (and print statements)
	strict bool // the compiler's strict mode: unused variables and imports are errors
}

// parse parses srcs and merges their data documents. Test files are included
// only when withTests is set. Every problem found is returned, each with its
// file and line.
func parse(srcs []source, withTests bool) (*parsed, error) {
	p := &parsed{modules: make(map[string]*ast.Module)}
	var kept []source
	var le LoadError
	data := map[string]any{}
	for _, s := range srcs {
		if s.test && !withTests {
			continue
		}
		kept = append(kept, s)
		p.files = append(p.files, s.name)
		if s.data {
			if err := mergeData(data, s); err != nil {
				le.Problems = append(le.Problems, *err)
			}
			continue
		}
		m, err := ast.ParseModuleWithOpts(s.name, string(s.text), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			le.Problems = append(le.Problems, problems(err).Problems...)
			continue
		}
		p.modules[s.name] = m
	}
	if len(le.Problems) > 0 {
		return nil, &le
	}
	p.revision = revision(kept)
	p.store = inmem.NewFromObjectWithOpts(data, inmem.OptRoundTripOnWrite(true), inmem.OptReturnASTValuesOnRead(true))
	return p, nil
}

// newCompiler returns the compiler every policy set is compiled with: Rego
// v1, no network built-ins, and data paths that must not clash with rules.
func (p *parsed) newCompiler(ctx context.Context, txn storage.Transaction, opts compileOptions) *ast.Compiler {
	return ast.NewCompiler().
		WithDefaultRegoVersion(ast.RegoV1).
		WithCapabilities(capabilities).
		WithPathConflictsCheck(storage.NonEmpty(ctx, p.store, txn)).
		WithEnablePrintStatements(opts.tests).
		WithStrict(opts.strict)
}

// compiled is a parsed and compiled policy set.
type compiled struct {
	*parsed
	compiler *ast.Compiler
}

// compile parses and compiles srcs.
func compile(ctx context.Context, srcs []source, opts compileOptions) (*compiled, error) {
	p, err := parse(srcs, opts.tests)
	if err != nil {
		return nil, err
	}
	txn, err := p.store.NewTransaction(ctx)
	if err != nil {
		return nil, err
	}
	defer p.store.Abort(ctx, txn)
	c := &compiled{parsed: p, compiler: p.newCompiler(ctx, txn, opts)}
	if c.compiler.Compile(p.modules); c.compiler.Failed() {
		return nil, problems(c.compiler.Errors)
	}
	return c, nil
}

// mergeData decodes the data document s and merges it into data at s.mount.
func mergeData(data map[string]any, s source) *Problem {
	var doc any
	var err error
	if strings.HasSuffix(s.name, ".json") {
		dec := json.NewDecoder(bytes.NewReader(s.text))
		dec.UseNumber()
		if err = dec.Decode(&doc); err == nil && dec.More() {
			err = errors.New("more than one JSON value")
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return &Problem{File: s.name, Line: lineOf(s.text, se.Offset), Code: "data_error", Message: se.Error()}
		}
	} else {
		err = yaml.Unmarshal(s.text, &doc)
	}
	if err != nil {
		return &Problem{File: s.name, Code: "data_error", Message: err.Error()}
	}
	if doc == nil {
		return nil // an empty file
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return &Problem{File: s.name, Line: 1, Code: "data_error", Message: "a data document must be an object"}
	}
	at := data
	for _, k := range s.mount {
		next, ok := at[k].(map[string]any)
		if !ok {
			if _, taken := at[k]; taken {
				return &Problem{File: s.name, Code: "data_error", Message: "data path " + strings.Join(s.mount, ".") + " conflicts with another data file"}
			}
			next = map[string]any{}
			at[k] = next
		}
		at = next
	}
	if conflict := mergeInto(at, obj, slices.Clone(s.mount)); conflict != "" {
		return &Problem{File: s.name, Code: "data_error", Message: "data." + conflict + " is also set by another data file"}
	}
	return nil
}

// mergeInto merges src into dst, returning the dotted path of the first leaf
// both set.
func mergeInto(dst, src map[string]any, at []string) string {
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := src[k]
		old, exists := dst[k]
		if !exists {
			dst[k] = v
			continue
		}
		om, ok1 := old.(map[string]any)
		vm, ok2 := v.(map[string]any)
		if !ok1 || !ok2 {
			return strings.Join(append(at, k), ".")
		}
		if c := mergeInto(om, vm, append(at, k)); c != "" {
			return c
		}
	}
	return ""
}

// lineOf returns the 1-based line of byte offset off in text.
func lineOf(text []byte, off int64) int {
	if off > int64(len(text)) {
		off = int64(len(text))
	}
	return bytes.Count(text[:off], []byte("\n")) + 1
}
