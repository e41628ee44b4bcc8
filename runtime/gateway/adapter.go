package gateway

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"
)

// Adapter is a platform connection the gateway supervises, such as the
// Feishu long connection.
type Adapter interface {
	// Name names the adapter in health reports ("feishu").
	Name() string
	// Run connects and serves until ctx ends, when it returns nil, or the
	// connection fails, when it returns why. It calls up once connected.
	// The gateway calls Run again after a backoff, so Run must build a
	// fresh connection each time.
	Run(ctx context.Context, up func()) error
}

// Adapter states.
const (
	StateStarting     = "starting"
	StateUp           = "up"
	StateReconnecting = "reconnecting"
	StateStopped      = "stopped"
)

// AdapterHealth is one adapter's state, for /readyz and the dashboard.
type AdapterHealth struct {
	Name  string    `json:"name"`
	State string    `json:"state"`
	Since time.Time `json:"since"`
	// LastError is why the connection last failed.
	LastError string `json:"last_error,omitempty"`
	// Restarts counts reconnections since start.
	Restarts int `json:"restarts"`
}

type adapterSet struct {
	mu     sync.Mutex
	health map[string]*AdapterHealth
	wg     sync.WaitGroup
}

// Start runs a under supervision until ctx ends: it restarts a after every
// failure, with exponential backoff and jitter, and keeps its health.
func (s *Service) Start(ctx context.Context, a Adapter) {
	set := &s.adapters
	set.mu.Lock()
	if set.health == nil {
		set.health = map[string]*AdapterHealth{}
	}
	set.health[a.Name()] = &AdapterHealth{Name: a.Name(), State: StateStarting, Since: time.Now()}
	set.mu.Unlock()
	set.wg.Add(1)
	go func() {
		defer set.wg.Done()
		s.supervise(ctx, a)
	}()
}

// Wait blocks until every started adapter has stopped (after its ctx ended).
func (s *Service) Wait() { s.adapters.wg.Wait() }

func (s *Service) supervise(ctx context.Context, a Adapter) {
	delay := s.opts.Backoff
	for {
		started := time.Now()
		err := a.Run(ctx, func() {
			s.setState(a.Name(), StateUp, nil)
			s.opts.Log.Info("gateway: adapter connected", "adapter", a.Name())
		})
		if ctx.Err() != nil {
			s.setState(a.Name(), StateStopped, nil)
			return
		}
		if err == nil {
			err = errors.New("the connection closed")
		}
		if time.Since(started) > time.Minute {
			delay = s.opts.Backoff // it was healthy for a while: start the backoff over
		}
		wait := delay/2 + rand.N(delay/2+1)
		s.setState(a.Name(), StateReconnecting, err)
		s.opts.Log.Warn("gateway: adapter disconnected; reconnecting", "adapter", a.Name(), "err", err, "in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			s.setState(a.Name(), StateStopped, nil)
			return
		case <-time.After(wait):
		}
		delay = min(delay*2, s.opts.MaxBackoff)
	}
}

func (s *Service) setState(name, state string, err error) {
	set := &s.adapters
	set.mu.Lock()
	defer set.mu.Unlock()
	h := set.health[name]
	if state == StateReconnecting {
		h.Restarts++
	}
	if err != nil {
		h.LastError = err.Error()
	}
	h.State, h.Since = state, time.Now()
}

// Health returns every adapter's state, by name.
func (s *Service) Health() []AdapterHealth {
	set := &s.adapters
	set.mu.Lock()
	defer set.mu.Unlock()
	out := make([]AdapterHealth, 0, len(set.health))
	for _, h := range set.health {
		out = append(out, *h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Ready returns nil when every adapter is connected, and otherwise names the
// ones that are not.
func (s *Service) Ready() error {
	var down []string
	for _, h := range s.Health() {
		if h.State != StateUp {
			msg := h.Name + " " + h.State
			if h.LastError != "" {
				msg += ": " + h.LastError
			}
			down = append(down, msg)
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("gateway: %s", strings.Join(down, "; "))
	}
	return nil
}
