// Command loadbench measures the OpenAI-compatible server under concurrent
// streaming load: it builds `nagent serve`, points it at the scripted model,
// drives it with stateless streamed chat completions at several concurrency
// levels, and reports throughput, latency percentiles and the server's memory.
//
//	go run ./bench/loadbench [--concurrency 1,50,200] [--duration 10s] [--json]
//
// Every address is on 127.0.0.1. bench/README.md explains the output.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

const (
	modulePath = "github.com/nagent/nagent"
	// replyText is the model's whole answer; the bench checks that every
	// stream delivers exactly this content.
	replyText  = "N-Agent load bench: a fixed answer, streamed in small chunks."
	replyChunk = 6 // runes per streamed chunk
	// idMarker prefixes the request id in the user message, so the model
	// side can tell which client request a model call belongs to.
	idMarker = "[loadbench:"
)

type options struct {
	root        string
	bin         string
	concurrency []int
	duration    time.Duration
	requests    int
	modelDelay  time.Duration
	warmup      int
	timeout     time.Duration
	json        bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "loadbench:", err)
		return 2
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "loadbench: "+format+"\n", a...) }
	rep, err := bench(ctx, opts, logf)
	if err != nil {
		fmt.Fprintln(stderr, err) // errors start with "loadbench:"
		return 1
	}
	if opts.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			logf("write report: %v", err)
			return 1
		}
	} else {
		printTable(stdout, rep)
	}
	if rep.Errors > 0 || rep.Interrupted {
		if rep.Interrupted {
			logf("interrupted")
		}
		logf("FAILED: %d request(s) failed", rep.Errors)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("loadbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: go run ./bench/loadbench [flags]\n\nLoad-tests `nagent serve` on 127.0.0.1 against the scripted model. Flags:")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.root, "root", "", "module root to build nagent from (default: found from the working directory)")
	fs.StringVar(&o.bin, "bin", "", "use this nagent binary instead of building one")
	levels := fs.String("concurrency", "1,50,200", "comma-separated concurrency levels (concurrent clients)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long each level sends requests (ignored with --requests)")
	fs.IntVar(&o.requests, "requests", 0, "requests per client per level instead of --duration")
	fs.DurationVar(&o.modelDelay, "model-delay", 50*time.Millisecond, "the scripted model's time per answer")
	fs.IntVar(&o.warmup, "warmup", 10, "sequential warm-up requests before the first level (not reported)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "timeout of one request")
	fs.BoolVar(&o.json, "json", false, "print a JSON report instead of the table")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, f := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 10000 {
			return o, fmt.Errorf("--concurrency: %q is not a whole number from 1 to 10000", f)
		}
		o.concurrency = append(o.concurrency, n)
	}
	switch {
	case o.requests < 0:
		return o, errors.New("--requests must not be negative")
	case o.requests == 0 && o.duration <= 0:
		return o, errors.New("--duration must be positive")
	case o.modelDelay < 0 || o.timeout <= 0 || o.warmup < 0:
		return o, errors.New("--model-delay and --warmup must not be negative, --timeout must be positive")
	}
	return o, nil
}

// report is the whole result; its JSON form is the --json output.
type report struct {
	Config         benchConfig   `json:"config"`
	Levels         []levelReport `json:"levels"`
	Errors         int           `json:"errors"`
	Interrupted    bool          `json:"interrupted"`
	ServerLogLines int           `json:"server_log_lines"`
}

type benchConfig struct {
	Concurrency       []int   `json:"concurrency"`
	DurationS         float64 `json:"duration_s,omitempty"`
	RequestsPerClient int     `json:"requests_per_client,omitempty"`
	ModelDelayMS      float64 `json:"model_delay_ms"`
	ReplyChars        int     `json:"reply_chars"`
	ReplyChunkChars   int     `json:"reply_chunk_chars"`
	NumCPU            int     `json:"num_cpu"`
	GoVersion         string  `json:"go_version"`
}

type levelReport struct {
	Concurrency int `json:"concurrency"`
	// Requests counts finished requests, failed ones included.
	Requests int     `json:"requests"`
	Errors   int     `json:"errors"`
	ElapsedS float64 `json:"elapsed_s"`
	// RequestsPerSecond counts successful requests only.
	RequestsPerSecond float64 `json:"requests_per_second"`
	TotalMS           latency `json:"total_ms"`
	AddedMS           latency `json:"added_ms"`
	FirstContentMS    latency `json:"first_content_ms"`
	ModelMS           latency `json:"model_ms"`
	// ModelTimeEstimated counts successes whose model time was not
	// measured, so the configured delay stood in for it.
	ModelTimeEstimated int `json:"model_time_estimated"`
	// ModelConnections counts TCP connections the server opened to the
	// model during the level.
	ModelConnections int64        `json:"model_connections"`
	ServerCPUCores   float64      `json:"server_cpu_cores"`
	BenchCPUCores    float64      `json:"bench_cpu_cores"`
	ServerRSSBytes   int64        `json:"server_rss_bytes"`
	ServerHWMBytes   int64        `json:"server_hwm_bytes"`
	ErrorSamples     []errorCount `json:"error_samples,omitempty"`
}

type latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

type errorCount struct {
	Error string `json:"error"`
	Count int    `json:"count"`
}

func bench(ctx context.Context, opts options, logf func(string, ...any)) (*report, error) {
	dir, err := os.MkdirTemp("", "nagent-loadbench-")
	if err != nil {
		return nil, fmt.Errorf("loadbench: %w", err)
	}
	defer os.RemoveAll(dir)

	bin := opts.bin
	if bin == "" {
		root := opts.root
		if root == "" {
			if root, err = findRoot(); err != nil {
				return nil, err
			}
		}
		logf("building nagent from %s", root)
		if bin, err = buildNagent(ctx, root, dir); err != nil {
			return nil, err
		}
	}
	m, err := startModel(opts.modelDelay)
	if err != nil {
		return nil, err
	}
	defer m.close()
	maxConc := slices.Max(opts.concurrency)
	srv, err := startServer(ctx, bin, dir, m.url(), max(1000, maxConc))
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	logf("nagent serve is ready on %s (pid %d)", srv.url, srv.pid)

	b := &bencher{
		client: newClient(maxConc),
		url:    srv.url + "/v1/chat/completions",
		model:  m,
		opts:   opts,
	}
	defer b.client.CloseIdleConnections()

	for i := range opts.warmup {
		if s := b.send(ctx, b.nextID.Add(1)); s.err != nil {
			return nil, fmt.Errorf("loadbench: warm-up request %d failed: %w\nserver log:\n%s", i+1, s.err, srv.logTail(20))
		}
	}

	rep := &report{Config: benchConfig{
		Concurrency: opts.concurrency, ModelDelayMS: ms(opts.modelDelay),
		ReplyChars: utf8.RuneCountInString(replyText), ReplyChunkChars: replyChunk,
		NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(),
	}}
	if opts.requests > 0 {
		rep.Config.RequestsPerClient = opts.requests
	} else {
		rep.Config.DurationS = opts.duration.Seconds()
	}
	for i, conc := range opts.concurrency {
		if i > 0 && !sleep(ctx, time.Second) { // let background title writes settle
			break
		}
		if ctx.Err() != nil {
			break
		}
		what := opts.duration.String()
		if opts.requests > 0 {
			what = fmt.Sprintf("%d requests each", opts.requests)
		}
		logf("level %d/%d: %d concurrent clients, %s", i+1, len(opts.concurrency), conc, what)
		lr := b.runLevel(ctx, conc, srv.pid)
		lr.ServerRSSBytes, lr.ServerHWMBytes = procMemory(srv.pid)
		logf("  %d requests, %d errors, %.1f req/s", lr.Requests, lr.Errors, lr.RequestsPerSecond)
		rep.Levels = append(rep.Levels, lr)
		rep.Errors += lr.Errors
	}
	rep.Interrupted = ctx.Err() != nil
	if err := srv.stop(); err != nil {
		logf("%v", err)
	}
	lines, tail := srv.logLines(5)
	rep.ServerLogLines = lines
	if lines > 0 {
		logf("the server logged %d warning/error line(s); the last ones:\n%s", lines, tail)
	}
	return rep, nil
}

// bencher sends the load.
type bencher struct {
	client *http.Client
	url    string
	model  *model
	opts   options
	nextID atomic.Int64
}

func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: 2 * conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}

// sample is the outcome of one request.
type sample struct {
	total, firstContent, model time.Duration
	modelMeasured              bool
	err                        error
}

// runLevel runs conc clients until the duration ends (or each has sent
// opts.requests) and summarises what they saw.
func (b *bencher) runLevel(ctx context.Context, conc, pid int) levelReport {
	serverCPU0, benchCPU0 := procCPU(strconv.Itoa(pid)), procCPU("self")
	conns0 := b.model.conns.Load()
	start := time.Now()
	stopAt := start.Add(b.opts.duration)
	perClient := make([][]sample, conc)
	var wg sync.WaitGroup
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ctx.Err() == nil; k++ {
				if b.opts.requests > 0 && k >= b.opts.requests || b.opts.requests == 0 && !time.Now().Before(stopAt) {
					return
				}
				s := b.send(ctx, b.nextID.Add(1))
				if ctx.Err() != nil { // interrupted: neither a success nor a server failure
					return
				}
				perClient[i] = append(perClient[i], s)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	lr := levelReport{Concurrency: conc, ElapsedS: elapsed.Seconds(), ModelConnections: b.model.conns.Load() - conns0}
	lr.ServerCPUCores = (procCPU(strconv.Itoa(pid)) - serverCPU0).Seconds() / elapsed.Seconds()
	lr.BenchCPUCores = (procCPU("self") - benchCPU0).Seconds() / elapsed.Seconds()
	var total, added, first, modelTime []time.Duration
	errCounts := map[string]int{}
	for _, samples := range perClient {
		for _, s := range samples {
			lr.Requests++
			if s.err != nil {
				lr.Errors++
				errCounts[clip(s.err.Error(), 160)]++
				continue
			}
			if !s.modelMeasured {
				lr.ModelTimeEstimated++
			}
			total = append(total, s.total)
			added = append(added, s.total-s.model)
			first = append(first, s.firstContent)
			modelTime = append(modelTime, s.model)
		}
	}
	lr.RequestsPerSecond = float64(len(total)) / elapsed.Seconds()
	lr.TotalMS, lr.AddedMS = percentiles(total), percentiles(added)
	lr.FirstContentMS, lr.ModelMS = percentiles(first), percentiles(modelTime)
	for msg, n := range errCounts {
		lr.ErrorSamples = append(lr.ErrorSamples, errorCount{msg, n})
	}
	slices.SortFunc(lr.ErrorSamples, func(a, b errorCount) int { return b.Count - a.Count })
	lr.ErrorSamples = lr.ErrorSamples[:min(len(lr.ErrorSamples), 5)]
	return lr
}

// send makes one stateless streamed chat completion and reads it to
// data: [DONE].
func (b *bencher) send(ctx context.Context, id int64) sample {
	ctx, cancel := context.WithTimeout(ctx, b.opts.timeout)
	defer cancel()
	body := fmt.Sprintf(`{"model":"bench","stream":true,"messages":[{"role":"user","content":"%s%d] Answer with the benchmark text."}]}`, idMarker, id)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, strings.NewReader(body))
	if err != nil {
		return sample{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		return sample{err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return sample{err: fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))}
	}
	content, firstContent, err := readStream(resp.Body, start)
	total := time.Since(start)
	if err != nil {
		return sample{err: err}
	}
	if content != replyText {
		return sample{err: fmt.Errorf("streamed content %q, want %q", clip(content, 80), replyText)}
	}
	io.Copy(io.Discard, resp.Body) // reach EOF so the connection is reused
	s := sample{total: total, firstContent: firstContent}
	s.model, s.modelMeasured = b.model.take(ctx, id)
	if !s.modelMeasured {
		s.model = b.opts.modelDelay
	}
	return s
}

// readStream reads chat.completion.chunk events up to data: [DONE],
// returning the concatenated content and when its first byte arrived.
func readStream(r io.Reader, start time.Time) (content string, firstContent time.Duration, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 16<<10), 1<<20)
	var text strings.Builder
	event := ""
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			event = ""
		case bytes.HasPrefix(line, []byte("event:")):
			event = string(bytes.TrimSpace(line[len("event:"):]))
		case bytes.HasPrefix(line, []byte("data:")):
			data := bytes.TrimSpace(line[len("data:"):])
			if event == "error" {
				return "", 0, fmt.Errorf("stream error event: %s", clip(string(data), 200))
			}
			if string(data) == "[DONE]" {
				return text.String(), firstContent, nil
			}
			var chunk struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(data, &chunk); err != nil {
				return "", 0, fmt.Errorf("bad chunk %s: %w", clip(string(data), 80), err)
			}
			for _, c := range chunk.Choices {
				if c.Delta.Content != "" && text.Len() == 0 {
					firstContent = time.Since(start)
				}
				text.WriteString(c.Delta.Content)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", 0, fmt.Errorf("read stream: %w", err)
	}
	return "", 0, errors.New("stream ended without data: [DONE]")
}

func percentiles(ds []time.Duration) latency {
	if len(ds) == 0 {
		return latency{}
	}
	slices.Sort(ds)
	at := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.999999) - 1 // nearest rank
		return ms(ds[min(max(i, 0), len(ds)-1)])
	}
	return latency{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ms(ds[len(ds)-1])}
}

func printTable(w io.Writer, rep *report) {
	c := rep.Config
	what := fmt.Sprintf("%gs per level", c.DurationS)
	if c.RequestsPerClient > 0 {
		what = fmt.Sprintf("%d requests per client", c.RequestsPerClient)
	}
	fmt.Fprintf(w, "nagent serve, stateless streamed chat completions, model %gms (%d chars in %d-char chunks), %s, %d CPUs, %s\n\n",
		c.ModelDelayMS, c.ReplyChars, c.ReplyChunkChars, what, c.NumCPU, c.GoVersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "conc\treqs\terrs\treq/s\ttotal p50/p90/p99\tadded p50/p90/p99\tttfc p50/p99\tmodel p50\tsrv cpu\tbench cpu\trss/hwm MiB\tmodel conns\t")
	f := func(vs ...float64) string {
		s := make([]string, len(vs))
		for i, v := range vs {
			s[i] = strconv.FormatFloat(v, 'f', 1, 64)
		}
		return strings.Join(s, "/")
	}
	for _, l := range rep.Levels {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f\t%s\t%s\t%s\t%.1f\t%.2f\t%.2f\t%s\t%d\t\n",
			l.Concurrency, l.Requests, l.Errors, l.RequestsPerSecond,
			f(l.TotalMS.P50, l.TotalMS.P90, l.TotalMS.P99), f(l.AddedMS.P50, l.AddedMS.P90, l.AddedMS.P99),
			f(l.FirstContentMS.P50, l.FirstContentMS.P99), l.ModelMS.P50, l.ServerCPUCores, l.BenchCPUCores,
			f(float64(l.ServerRSSBytes)/(1<<20), float64(l.ServerHWMBytes)/(1<<20)), l.ModelConnections)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nLatencies in ms. total: request sent to data: [DONE]; added: total minus the model's measured time;")
	fmt.Fprintln(w, "ttfc: to the first content byte; srv/bench cpu: cores used; model conns: connections the server opened to the model.")
	for _, l := range rep.Levels {
		if l.ModelTimeEstimated > 0 {
			fmt.Fprintf(w, "conc %d: the model time of %d request(s) was not measured; the configured delay stood in.\n", l.Concurrency, l.ModelTimeEstimated)
		}
		for _, e := range l.ErrorSamples {
			fmt.Fprintf(w, "conc %d: %d× %s\n", l.Concurrency, e.Count, e.Error)
		}
	}
	if rep.Interrupted {
		fmt.Fprintln(w, "interrupted: the last level is partial or missing.")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// sleep waits for d unless ctx ends first; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
