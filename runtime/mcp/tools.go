package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/nagent/nagent/runtime/tools"
)

const maxToolName = 64

// remoteTool is one synced tool: its local definition and where it lives.
type remoteTool struct {
	def    tools.ToolDefinition
	site   string
	remote string
}

// LocalName is the exposed name of remote tool of site, before clashes
// within the site are resolved (see the package doc).
func LocalName(site, remote string) string {
	var b strings.Builder
	for _, r := range remote {
		if r < 128 && (r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := "mcp_" + site + "_" + b.String()
	if len(name) > maxToolName {
		sum := sha256.Sum256([]byte(remote))
		name = name[:maxToolName-9] + "_" + hex.EncodeToString(sum[:4])
	}
	return name
}

// RiskOf maps MCP annotations onto a risk level (see the package doc).
func RiskOf(a mcpgo.ToolAnnotation) tools.RiskLevel {
	switch {
	case a.ReadOnlyHint != nil && *a.ReadOnlyHint:
		return tools.RiskLow
	case a.DestructiveHint != nil && !*a.DestructiveHint:
		return tools.RiskMedium
	}
	return tools.RiskHigh
}

// definitions turns a site's remote tools into local definitions with
// collision-free names.
func definitions(site string, list []mcpgo.Tool) ([]remoteTool, error) {
	out := make([]remoteTool, 0, len(list))
	taken := make(map[string]bool, len(list))
	for _, t := range list {
		name := LocalName(site, t.Name)
		for i := 2; taken[name]; i++ {
			suffix := fmt.Sprintf("_%d", i)
			base := LocalName(site, t.Name)
			if len(base)+len(suffix) > maxToolName {
				base = base[:maxToolName-len(suffix)]
			}
			name = base + suffix
		}
		taken[name] = true
		schema, err := inputSchema(t)
		if err != nil {
			return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		out = append(out, remoteTool{
			def: tools.ToolDefinition{
				Name: name, Description: desc, Parameters: schema,
				RiskLevel: RiskOf(t.Annotations), SourceType: tools.SourceMCP,
			},
			site: site, remote: t.Name,
		})
	}
	return out, nil
}

// inputSchema is the tool's input schema as JSON. mcp-go decodes it into a
// struct that keeps type, properties (in order), required, $defs and
// additionalProperties.
func inputSchema(t mcpgo.Tool) (json.RawMessage, error) {
	if len(t.RawInputSchema) > 0 {
		return t.RawInputSchema, nil
	}
	s := t.InputSchema
	if s.Type == "" {
		s.Type = "object"
	}
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	return json.Marshal(s)
}
