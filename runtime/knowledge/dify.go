package knowledge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/errs"
)

// TypeDify is the retriever type of the Dify External Knowledge API, which
// RAGFlow and other services also serve.
const TypeDify = "dify"

// DifyConfig configures a knowledge base reached through the Dify External
// Knowledge API. The API key is the knowledge base's secret.
type DifyConfig struct {
	// Endpoint is the API's base URL; requests go to {endpoint}/retrieval.
	Endpoint string `json:"endpoint"`
	// KnowledgeID names the knowledge source inside the external service.
	KnowledgeID string `json:"knowledge_id"`
	// ScoreThreshold drops results scored below it (0 to 1; 0 keeps all).
	ScoreThreshold float64 `json:"score_threshold,omitempty"`
	// TimeoutMS bounds one request (default 30000).
	TimeoutMS int `json:"timeout_ms,omitempty"`
}

func (c *DifyConfig) check() error {
	u, err := url.Parse(c.Endpoint)
	switch {
	case c.Endpoint == "":
		return errs.Errorf(errs.EINVALID, "config: endpoint is required, e.g. https://ragflow.example.com/api/v1/dify")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return errs.Errorf(errs.EINVALID, "config: endpoint %q is not an http(s) URL", c.Endpoint)
	case c.KnowledgeID == "":
		return errs.Errorf(errs.EINVALID, "config: knowledge_id is required")
	case c.ScoreThreshold < 0 || c.ScoreThreshold > 1:
		return errs.Errorf(errs.EINVALID, "config: score_threshold is %g; it must be between 0 and 1", c.ScoreThreshold)
	}
	return nil
}

// DifyFactory builds Dify retrievers.
type DifyFactory struct {
	// Client is the HTTP client (default http.DefaultClient).
	Client *http.Client
}

var _ Factory = DifyFactory{}

// Validate checks a Dify configuration.
func (DifyFactory) Validate(raw json.RawMessage) error {
	var c DifyConfig
	if err := decodeConfig(raw, &c); err != nil {
		return err
	}
	return c.check()
}

// Create returns a retriever for kb that authenticates with secret.
func (f DifyFactory) Create(_ context.Context, kb Instance, secret string) (Retriever, error) {
	var c DifyConfig
	if err := decodeConfig(kb.Config, &c); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if secret == "" {
		return nil, errs.Errorf(errs.EUNAUTHORIZED, "no API key is stored; set one with nagent kb add --secret-env")
	}
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	timeout := 30 * time.Second
	if c.TimeoutMS > 0 {
		timeout = time.Duration(c.TimeoutMS) * time.Millisecond
	}
	return &DifyRetriever{cfg: c, key: secret, client: client, timeout: timeout}, nil
}

// DifyRetriever calls POST {endpoint}/retrieval.
type DifyRetriever struct {
	cfg     DifyConfig
	key     string
	client  *http.Client
	timeout time.Duration
}

var _ Retriever = (*DifyRetriever)(nil)

type difyRequest struct {
	KnowledgeID      string `json:"knowledge_id"`
	Query            string `json:"query"`
	RetrievalSetting struct {
		TopK           int     `json:"top_k"`
		ScoreThreshold float64 `json:"score_threshold"`
	} `json:"retrieval_setting"`
}

type difyResponse struct {
	Records []struct {
		Content  string         `json:"content"`
		Score    float64        `json:"score"`
		Title    string         `json:"title"`
		Metadata map[string]any `json:"metadata"`
	} `json:"records"`
	ErrorCode any    `json:"error_code"`
	ErrorMsg  string `json:"error_msg"`
}

// Search runs one retrieval request.
func (r *DifyRetriever) Search(ctx context.Context, query string, topK int) ([]Chunk, error) {
	var body difyRequest
	body.KnowledgeID, body.Query = r.cfg.KnowledgeID, query
	body.RetrievalSetting.TopK, body.RetrievalSetting.ScoreThreshold = topK, r.cfg.ScoreThreshold
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(r.cfg.Endpoint, "/")+"/retrieval", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.key)
	resp, err := r.client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, errs.Errorf(errs.EUNAVAILABLE, "retrieval at %s timed out after %s", r.cfg.Endpoint, r.timeout)
		}
		return nil, errs.Errorf(errs.EUNAVAILABLE, "retrieval at %s failed: %v", r.cfg.Endpoint, redact(err.Error(), r.key))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, errs.Errorf(errs.EUNAVAILABLE, "retrieval at %s: reading the response: %v", r.cfg.Endpoint, err)
	}
	var out difyResponse
	jsonErr := json.Unmarshal(raw, &out)
	if resp.StatusCode != http.StatusOK {
		detail := strings.TrimSpace(string(raw))
		if jsonErr == nil && out.ErrorMsg != "" {
			detail = fmt.Sprintf("error_code %v: %s", out.ErrorCode, out.ErrorMsg)
		}
		detail = redact(truncateText(detail, 300), r.key)
		code := errs.EUNAVAILABLE
		switch {
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			return nil, errs.Errorf(errs.EUNAUTHORIZED, "retrieval at %s refused the API key (HTTP %d: %s); check the knowledge base's secret", r.cfg.Endpoint, resp.StatusCode, detail)
		case resp.StatusCode == http.StatusNotFound:
			code = errs.ENOTFOUND
		case resp.StatusCode < 500:
			code = errs.EINVALID
		}
		return nil, errs.Errorf(code, "retrieval at %s: HTTP %d: %s", r.cfg.Endpoint, resp.StatusCode, detail)
	}
	if jsonErr != nil {
		return nil, errs.Errorf(errs.EUNAVAILABLE, "retrieval at %s: the response is not the External Knowledge API's JSON: %v", r.cfg.Endpoint, jsonErr)
	}
	chunks := make([]Chunk, 0, len(out.Records))
	for _, rec := range out.Records {
		c := Chunk{Content: rec.Content, Score: rec.Score, Title: rec.Title, Metadata: rec.Metadata}
		for _, k := range []string{"path", "source", "url", "document_name", "doc_id", "document_id"} {
			if v, ok := rec.Metadata[k].(string); ok && v != "" {
				c.Source = v
				break
			}
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

func truncateText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
