package docker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/sandbox"
)

// reportPercentiles adds p50 and p90 of the samples, in ms.
func reportPercentiles(b *testing.B, samples []time.Duration) {
	slices.Sort(samples)
	at := func(p float64) float64 {
		return float64(samples[int(p*float64(len(samples)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.9), "p90-ms")
}

// BenchmarkExecPrint1Reused is the latency of print(1) in a session whose
// container is already running: one docker exec, the stats check, and the
// scratch moves.
//
//	go test ./runtime/sandbox/docker -run '^$' -bench Print1 -benchtime 20x
func BenchmarkExecPrint1Reused(b *testing.B) {
	backend := testBackend(b)
	s := openSession(b, backend, sandbox.Limits{})
	ctx := context.Background()
	s.exec(ctx, "print(1)", time.Minute) // start the container
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if res := s.exec(ctx, "print(1)", time.Minute); res.Reason != sandbox.ExitOK {
			b.Fatalf("%+v", res)
		}
		samples = append(samples, time.Since(start))
	}
	reportPercentiles(b, samples)
}

// BenchmarkExecPrint1FirstCall is the latency of a session's first
// print(1): create and start the container, then exec (Close, which removes
// the container, is not timed).
func BenchmarkExecPrint1FirstCall(b *testing.B) {
	backend := testBackend(b)
	ctx := context.Background()
	samples := make([]time.Duration, 0, b.N)
	for b.Loop() {
		b.StopTimer()
		s := openSession(b, backend, sandbox.Limits{})
		b.StartTimer()
		start := time.Now()
		if res := s.exec(ctx, "print(1)", time.Minute); res.Reason != sandbox.ExitOK {
			b.Fatalf("%+v", res)
		}
		samples = append(samples, time.Since(start))
		b.StopTimer()
		if err := s.env.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportPercentiles(b, samples)
}
