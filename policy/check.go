package policy

import (
	"cmp"
	"context"
	"io"
	"slices"
	"time"

	"github.com/open-policy-agent/opa/v1/tester"
)

// CheckOptions tune Check.
type CheckOptions struct {
	// Strict turns on the compiler's strict mode: unused local variables,
	// unused imports and deprecated built-ins become errors.
	Strict bool
}

// CheckResult describes a policy set that compiled.
type CheckResult struct {
	// Files are the files checked, embedded defaults first.
	Files []string `json:"files"`
	// Revision is the revision the engine would report for these files.
	Revision string `json:"revision"`
	// ExposeCache says whether the engine may cache expose decisions for
	// this set: no rule reads input.time, input.session.id or the whole
	// input, and none calls a nondeterministic built-in.
	ExposeCache bool `json:"expose_cache"`
}

// Check parses, compiles and type-checks the embedded defaults together
// with the files under dir, test files included, exactly as the engine
// would load them. Problems come back as a *LoadError, each with its file
// and line.
func Check(ctx context.Context, dir string, opts CheckOptions) (*CheckResult, error) {
	admin, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	srcs := append(builtinSources(), admin...)
	c, err := compile(ctx, srcs, compileOptions{tests: true, strict: opts.Strict})
	if err != nil {
		return nil, err
	}
	set, err := load(ctx, srcs) // the decision queries themselves compile
	if err != nil {
		return nil, problems(err)
	}
	return &CheckResult{Files: c.files, Revision: set.revision, ExposeCache: set.cacheable}, nil
}

// TestOptions tune Test.
type TestOptions struct {
	// Run, when set, runs only the tests whose name matches this regular
	// expression (like opa test --run).
	Run string
	// Timeout bounds each test (default 5s).
	Timeout time.Duration
}

// Test runs the Rego unit tests (rules named test_*) of the embedded
// defaults and of the files under dir with OPA's tester, as `opa test`
// would, with built-in errors raised as the engine raises them. Results are
// sorted by file and line. A policy set that does not compile is a
// *LoadError.
func Test(ctx context.Context, dir string, opts TestOptions) ([]*tester.Result, error) {
	admin, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	p, err := parse(append(builtinSources(), admin...), true)
	if err != nil {
		return nil, err
	}
	txn, err := p.store.NewTransaction(ctx)
	if err != nil {
		return nil, err
	}
	defer p.store.Abort(ctx, txn)
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	ch, err := tester.NewRunner().
		SetCompiler(p.newCompiler(ctx, txn, compileOptions{tests: true})).
		SetStore(p.store).
		RaiseBuiltinErrors(true).
		SetTimeout(opts.Timeout).
		Filter(opts.Run).
		SetModules(p.modules).
		RunTests(ctx, nil)
	if err != nil {
		return nil, problems(err)
	}
	var results []*tester.Result
	for r := range ch {
		results = append(results, r)
	}
	slices.SortFunc(results, func(a, b *tester.Result) int {
		if c := cmp.Compare(a.Location.File, b.Location.File); c != 0 {
			return c
		}
		return cmp.Compare(a.Location.Row, b.Location.Row)
	})
	return results, nil
}

// ReportTests prints results as `opa test` does: failures with the failing
// line, then PASS/FAIL counts; verbose lists every test.
func ReportTests(w io.Writer, results []*tester.Result, verbose bool) error {
	ch := make(chan *tester.Result, len(results))
	for _, r := range results {
		ch <- r
	}
	close(ch)
	return tester.PrettyReporter{Output: w, Verbose: verbose, FailureLine: true}.Report(ch)
}
