package policy

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/nagent/nagent/runtime/tools"
)

// maxCachedDecisions bounds the expose cache of one policy set; when full it
// starts over.
const maxCachedDecisions = 8192

// decisionCache holds the expose decisions of one policy set, keyed by
// exposeKey. It dies with its set, so a reload never serves a stale entry.
type decisionCache struct {
	mu sync.RWMutex
	m  map[string]tools.Decision
}

func (c *decisionCache) get(key []byte) (tools.Decision, bool) {
	c.mu.RLock()
	d, ok := c.m[string(key)] // no copy for a lookup
	c.mu.RUnlock()
	return d, ok
}

func (c *decisionCache) put(key []byte, d tools.Decision) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedDecisions {
		c.m = make(map[string]tools.Decision, 256)
	}
	c.m[string(key)] = d
	c.mu.Unlock()
}

// inputUse is what the rules of a policy set read of the input document,
// found by walking the compiled modules. It errs on the side of reading.
type inputUse struct {
	// all: some rule reads the whole input, or a key chosen at run time.
	all bool
	// keys are the top-level keys read.
	keys map[string]bool
	// sessionID: some rule reads input.session.id or all of input.session.
	sessionID bool
	// nondeterministic: some rule calls a built-in such as time.now_ns.
	nondeterministic bool
}

// readsAll is the use of a policy that reads everything.
var readsAll = inputUse{all: true}

func (u *inputUse) reads(key string) bool { return u.all || u.keys[key] }

// cacheable reports whether two expose inputs with the same exposeKey get
// the same decision: nothing reads input.time or input.session.id, and
// nothing is nondeterministic.
func (u *inputUse) cacheable() bool {
	return !u.all && !u.keys["time"] && !u.sessionID && !u.nondeterministic
}

// analyseInput walks every module of c for references to input and calls
// of nondeterministic built-ins.
func analyseInput(c *ast.Compiler) *inputUse {
	u := &inputUse{keys: map[string]bool{}}
	nondeterministic := func(op string) {
		if b, ok := ast.BuiltinMap[op]; ok && b.Nondeterministic {
			u.nondeterministic = true
		}
	}
	for _, m := range c.Modules {
		ast.WalkRefs(m, func(r ast.Ref) bool {
			if !r[0].Equal(ast.InputRootDocument) {
				return false
			}
			if len(r) == 1 {
				u.all = true
				return false
			}
			k, ok := r[1].Value.(ast.String)
			if !ok {
				u.all = true
				return false
			}
			u.keys[string(k)] = true
			if k == "session" {
				if len(r) == 2 {
					u.sessionID = true
				} else if sub, ok := r[2].Value.(ast.String); !ok || sub != "source" {
					u.sessionID = true
				}
			}
			return false
		})
		ast.WalkExprs(m, func(e *ast.Expr) bool {
			if e.IsCall() {
				nondeterministic(e.Operator().String())
			}
			return false
		})
		ast.WalkTerms(m, func(t *ast.Term) bool {
			if call, ok := t.Value.(ast.Call); ok {
				nondeterministic(call[0].String())
			}
			return false
		})
	}
	return u
}
