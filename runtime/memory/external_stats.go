package memory

import "sort"

func (m *ExternalMemoryManager) stat(provider, op string) *opStats {
	m.statsMu.Lock()
	defer m.statsMu.Unlock()
	k := [2]string{provider, op}
	s, ok := m.stats[k]
	if !ok {
		s = &opStats{}
		m.stats[k] = s
	}
	return s
}

// Stats returns the counters of every provider operation since start, by
// provider and operation. The failure counters are also persisted (see
// store.ListMemoryFailures), so they survive a restart.
func (m *ExternalMemoryManager) Stats() []ProviderStats {
	m.statsMu.Lock()
	defer m.statsMu.Unlock()
	out := make([]ProviderStats, 0, len(m.stats))
	for k, s := range m.stats {
		ps := ProviderStats{Provider: k[0], Operation: k[1], Calls: s.calls.Load(), Failures: s.failures.Load(), Timeouts: s.timeouts.Load()}
		if e, ok := s.lastError.Load().(string); ok {
			ps.LastError = e
		}
		out = append(out, ps)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return out[i].Operation < out[j].Operation
	})
	return out
}

// boundedCache is a map that forgets its oldest entries past a size. It is
// not safe for concurrent use.
type boundedCache[V any] struct {
	max   int
	m     map[string]V
	order []string
}

func newBoundedCache[V any](max int) boundedCache[V] {
	return boundedCache[V]{max: max, m: make(map[string]V)}
}

func (c *boundedCache[V]) get(k string) (V, bool) {
	v, ok := c.m[k]
	return v, ok
}

func (c *boundedCache[V]) put(k string, v V) {
	if _, ok := c.m[k]; !ok {
		c.order = append(c.order, k)
	}
	c.m[k] = v
	for len(c.m) > c.max && len(c.order) > 0 {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	if len(c.order) > 2*c.max { // compact keys deleted out of order
		keep := c.order[:0]
		for _, k := range c.order {
			if _, ok := c.m[k]; ok {
				keep = append(keep, k)
			}
		}
		c.order = keep
	}
}

func (c *boundedCache[V]) del(k string) { delete(c.m, k) }
