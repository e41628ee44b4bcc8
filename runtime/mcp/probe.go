package mcp

import (
	"context"
	"log/slog"
	"time"

	"github.com/nagent/nagent/runtime/tools"
)

// ProbeResult is what one probe of a site found.
type ProbeResult struct {
	Site            string        `json:"site"`
	ServerName      string        `json:"server_name"`
	ServerVersion   string        `json:"server_version"`
	ProtocolVersion string        `json:"protocol_version"`
	Tools           []ProbedTool  `json:"tools"`
	Duration        time.Duration `json:"-"`
	DurationMS      int64         `json:"duration_ms"`
}

// ProbedTool is one tool a probe found, under its exposed name.
type ProbedTool struct {
	Name        string          `json:"name"`
	RemoteName  string          `json:"remote_name"`
	Description string          `json:"description"`
	RiskLevel   tools.RiskLevel `json:"risk_level"`
}

// Probe connects to s (initialize, then tools/list), maps its tools as a
// sync would, and disconnects.
func Probe(ctx context.Context, s Site, log *slog.Logger) (ProbeResult, error) {
	start := time.Now()
	sess, err := Dial(ctx, s, log, nil)
	if err != nil {
		return ProbeResult{}, err
	}
	defer sess.Close()
	list, err := sess.ListTools(ctx)
	if err != nil {
		return ProbeResult{}, err
	}
	ts, err := definitions(s.Name, list)
	if err != nil {
		return ProbeResult{}, err
	}
	res := ProbeResult{
		Site: s.Name, ServerName: sess.Server.ServerInfo.Name, ServerVersion: sess.Server.ServerInfo.Version,
		ProtocolVersion: sess.Server.ProtocolVersion, Tools: make([]ProbedTool, 0, len(ts)),
	}
	for _, t := range ts {
		res.Tools = append(res.Tools, ProbedTool{Name: t.def.Name, RemoteName: t.remote, Description: t.def.Description, RiskLevel: t.def.RiskLevel})
	}
	res.Duration = time.Since(start)
	res.DurationMS = res.Duration.Milliseconds()
	return res, nil
}
