package policy

import (
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/nagent/nagent/runtime/tools"
)

// ErrUndefined is the cause of a denial whose decision the policy left
// undefined, for instance for an input of the wrong shape.
var ErrUndefined = errors.New("decision is undefined")

// MemoryDecision is the verdict on one external-memory write.
type MemoryDecision struct {
	Allow   bool     `json:"allow"`
	Reasons []string `json:"reasons"`
}

// parseToolDecision reads data.nagent.tools.decision. Any other shape than
// the documented one is an error, and so a denial.
func parseToolDecision(v ast.Value) (tools.Decision, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return tools.Decision{}, fmt.Errorf("decision is %s, want an object", ast.ValueName(v))
	}
	var d tools.Decision
	var err error
	if d.Allow, err = boolField(obj, kAllow); err != nil {
		return tools.Decision{}, err
	}
	if d.Confirm, err = boolField(obj, kConfirm); err != nil {
		return tools.Decision{}, err
	}
	if d.Reasons, err = reasonsField(obj); err != nil {
		return tools.Decision{}, err
	}
	if t := obj.Get(kConstraints); t != nil {
		c, ok := t.Value.(ast.Object)
		if !ok {
			return tools.Decision{}, fmt.Errorf("decision.constraints is %s, want an object", ast.ValueName(t.Value))
		}
		if c.Len() > 0 {
			x, err := ast.JSON(c)
			if err != nil {
				return tools.Decision{}, fmt.Errorf("decision.constraints: %w", err)
			}
			d.Constraints, _ = x.(map[string]any)
		}
	}
	return d, nil
}

// parseMemoryDecision reads data.nagent.memory.decision.
func parseMemoryDecision(v ast.Value) (MemoryDecision, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return MemoryDecision{}, fmt.Errorf("decision is %s, want an object", ast.ValueName(v))
	}
	allow, err := boolField(obj, kAllow)
	if err != nil {
		return MemoryDecision{}, err
	}
	reasons, err := reasonsField(obj)
	if err != nil {
		return MemoryDecision{}, err
	}
	return MemoryDecision{Allow: allow, Reasons: reasons}, nil
}

func boolField(obj ast.Object, key *ast.Term) (bool, error) {
	t := obj.Get(key)
	if t == nil {
		return false, fmt.Errorf("decision.%s is missing", key.Value.(ast.String))
	}
	b, ok := t.Value.(ast.Boolean)
	if !ok {
		return false, fmt.Errorf("decision.%s is %s, want a boolean", key.Value.(ast.String), ast.ValueName(t.Value))
	}
	return bool(b), nil
}

// reasonsField reads decision.reasons: an array (or set) of strings, or
// missing.
func reasonsField(obj ast.Object) ([]string, error) {
	t := obj.Get(kReasons)
	if t == nil {
		return nil, nil
	}
	var out []string
	add := func(e *ast.Term) error {
		s, ok := e.Value.(ast.String)
		if !ok {
			return fmt.Errorf("decision.reasons holds %s, want strings", ast.ValueName(e.Value))
		}
		out = append(out, string(s))
		return nil
	}
	switch r := t.Value.(type) {
	case *ast.Array:
		out = make([]string, 0, r.Len())
		for i := range r.Len() {
			if err := add(r.Elem(i)); err != nil {
				return nil, err
			}
		}
	case ast.Set:
		sorted := r.Sorted() // a stable order
		out = make([]string, 0, sorted.Len())
		for i := range sorted.Len() {
			if err := add(sorted.Elem(i)); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("decision.reasons is %s, want an array of strings", ast.ValueName(t.Value))
	}
	return out, nil
}
