package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// emptyParameters is the schema of a tool that takes no arguments.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// toolNamePattern is what providers accept as a function name.
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validateDefinition checks def, fills its defaults (nil parameters become
// emptyParameters, an empty source becomes source) and compiles its
// parameters schema.
func validateDefinition(def ToolDefinition, source SourceType) (ToolDefinition, *jsonschema.Schema, error) {
	if !toolNamePattern.MatchString(def.Name) {
		return def, nil, fmt.Errorf("%w: name %q must match %s", ErrInvalidDefinition, def.Name, toolNamePattern)
	}
	if def.SourceType == "" {
		def.SourceType = source
	}
	if len(bytes.TrimSpace(def.Parameters)) == 0 || bytes.Equal(bytes.TrimSpace(def.Parameters), []byte("null")) {
		def.Parameters = emptyParameters
	}
	schema, err := compileParameters(def.Parameters)
	if err != nil {
		return def, nil, fmt.Errorf("%w: tool %s: parameters: %w", ErrInvalidDefinition, def.Name, err)
	}
	return def, schema, nil
}

// refusingLoader keeps a tool's schema from loading anything by $ref: the
// schemas come from plugins and remote MCP servers, and must not make the
// runtime read files or fetch URLs. The draft meta-schemas are embedded in
// the library and need no loader.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed in a tool schema", url)
}

// compileParameters compiles a parameters schema, which must be a JSON object
// whose top-level "type" is "object", as providers require of a function's
// parameters.
func compileParameters(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("got %s, want a JSON Schema object", jsonKind(doc))
	}
	if t, _ := obj["type"].(string); t != "object" {
		return nil, errors.New(`top-level "type" must be "object"`)
	}
	const url = "mem:///parameters.json"
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	schema, err := c.Compile(url)
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		// The library's message is an indented tree; one line reads better in
		// a registration error.
		return nil, fmt.Errorf("not a valid JSON Schema: %s", strings.Join(schemaViolations(ve), "; "))
	}
	return schema, err
}

// argumentsHint ends every invalid-arguments message, telling the model how
// to recover.
const argumentsHint = "send a JSON object that matches the tool's parameters schema"

// parseArguments decodes the model's arguments for validation. An empty or
// blank string means {}. The returned raw JSON is what the policy and the
// executor see.
func parseArguments(tool, args string) (raw json.RawMessage, doc any, msg string) {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}"), map[string]any{}, ""
	}
	raw = json.RawMessage(args)
	if !json.Valid(raw) {
		detail := "malformed"
		var se *json.SyntaxError
		if err := json.Unmarshal(raw, new(json.RawMessage)); errors.As(err, &se) {
			detail = fmt.Sprintf("%s at offset %d", se, se.Offset)
		}
		return nil, nil, fmt.Sprintf("invalid arguments for %s: not valid JSON (%s); %s", tool, detail, argumentsHint)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil { // unreachable after json.Valid, kept for safety
		return nil, nil, fmt.Sprintf("invalid arguments for %s: not valid JSON (%v); %s", tool, err, argumentsHint)
	}
	return raw, doc, ""
}

// validateArguments checks doc against schema and returns a message for the
// model, or "" when doc is valid. The message lists each violation as
// "at <JSON pointer>: <what was wrong>", sorted by location, one a line.
func validateArguments(tool string, schema *jsonschema.Schema, doc any) string {
	err := schema.Validate(doc)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Sprintf("invalid arguments for %s: %v; %s", tool, err, argumentsHint)
	}
	violations := schemaViolations(ve)
	noun := "violations"
	if len(violations) == 1 {
		noun = "violation"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid arguments for %s: %d schema %s:\n", tool, len(violations), noun)
	for _, v := range violations {
		b.WriteString("- ")
		b.WriteString(v)
		b.WriteByte('\n')
	}
	b.WriteString(argumentsHint)
	return b.String()
}

// schemaViolations flattens a validation error into its leaves, the
// concrete violations, each as "at <pointer>: <message>". The root is
// written "(root)". The list is sorted, because the library's order follows
// map iteration.
func schemaViolations(ve *jsonschema.ValidationError) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		loc := jsonPointer(e.InstanceLocation)
		if loc == "" {
			loc = "(root)"
		}
		out = append(out, "at "+loc+": "+violationMessage(e))
	}
	walk(ve)
	slices.Sort(out)
	return slices.Compact(out)
}

// violationMessage is the English message of a leaf violation without its
// location. The library only prints messages with their location, so the
// location is blanked and its fixed prefix removed.
func violationMessage(e *jsonschema.ValidationError) string {
	leaf := *e
	leaf.InstanceLocation = nil
	leaf.Causes = nil
	return strings.TrimPrefix(leaf.Error(), "at '': ")
}

// jsonPointer writes an instance location as an RFC 6901 JSON pointer.
func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, tok := range tokens {
		b.WriteByte('/')
		tok = strings.ReplaceAll(tok, "~", "~0")
		b.WriteString(strings.ReplaceAll(tok, "/", "~1"))
	}
	return b.String()
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
