package openai

import "strings"

// externalMemory reads the external-memory selection a client asks for in
// metadata.external_memory, a comma-separated list of providers and
// projects ("builtin,external_memory_1"). It applies to a new session only:
// a session's selection is locked by its first turn. Without the key the
// configured default applies (nil); an empty value selects none.
func externalMemory(meta map[string]string) []string {
	v, ok := meta["external_memory"]
	if !ok {
		return nil
	}
	out := []string{}
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}
