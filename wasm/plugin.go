package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/nagent/nagent/runtime/tools"
)

// checkExport is the optional export that says whether a plugin can run here.
const checkExport = "nagent_check"

// checkTool is the tool name of the check request, for manifests with check: true.
const checkTool = "nagent.check"

// plugin is one loaded plugin: its manifest and its module, compiled once.
// Every call instantiates the module afresh.
type plugin struct {
	host     *Host
	manifest *Manifest
	dir      string
	digest   string
	defs     []tools.ToolDefinition

	rt        wazero.Runtime
	compiled  wazero.CompiledModule
	interrupt Interrupt
	// reason says why the plugin is unusable; "" when it is ready.
	reason string

	config  json.RawMessage   // validated config object
	secrets map[string]string // declared secrets that have values
	env     [][2]string       // allowlisted environment
	fs      wazero.FSConfig

	calls   sync.WaitGroup // running calls
	retired sync.Once
}

// digest identifies a plugin's content.
func digest(m *Manifest, bin []byte) string {
	h := sha256.New()
	mj, _ := json.Marshal(m)
	h.Write(mj)
	h.Write([]byte{0})
	h.Write(bin)
	return hex.EncodeToString(h.Sum(nil))
}

// compile prepares a plugin: settings, module checks, compilation (through
// the cache) and the optional check. A returned error means the plugin did
// not load; a plugin with a reason loaded but is unusable here.
func (h *Host) compile(ctx context.Context, dir string, m *Manifest, bin []byte, sum string) (*plugin, error) {
	p := &plugin{host: h, manifest: m, dir: dir, digest: sum, defs: m.Definitions()}
	if err := p.settings(h.opts.Settings[m.Name], h.opts.Getenv); err != nil {
		return nil, err
	}
	info, err := inspectModule(bin)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", m.Module, err)
	}
	if info.minPages > m.Limits.memoryPages() {
		return nil, fmt.Errorf("limits.memory_mib: the module needs %d MiB of memory to start, over its limit of %d MiB; raise limits.memory_mib",
			(info.minPages+15)/16, m.Limits.MemoryMiB)
	}

	p.interrupt = h.opts.Interrupt
	if p.interrupt == InterruptLoopCheck {
		rewritten, err := instrument(bin)
		if err != nil {
			h.opts.Log.WarnContext(ctx, "plugin module cannot take the loop-check interrupt; using wazero's close-on-context-done",
				"plugin", m.Name, "err", err)
			p.interrupt = InterruptCloseOnContextDone
		} else {
			bin = rewritten
		}
	}

	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(h.cache).
		WithCloseOnContextDone(p.interrupt == InterruptCloseOnContextDone)
	p.rt = wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, p.rt); err != nil {
		p.close(ctx)
		return nil, fmt.Errorf("wasi: %w", err)
	}
	if err := instantiateHostModule(ctx, p.rt); err != nil {
		p.close(ctx)
		return nil, fmt.Errorf("host module: %w", err)
	}
	p.compiled, err = p.rt.CompileModule(ctx, bin)
	if err != nil {
		p.close(ctx)
		return nil, fmt.Errorf("module %s does not compile: %w", m.Module, err)
	}
	if err := checkImports(p.compiled); err != nil {
		p.close(ctx)
		return nil, fmt.Errorf("module %s: %w", m.Module, err)
	}
	if _, ok := p.compiled.ExportedFunctions()["_start"]; !ok {
		p.close(ctx)
		return nil, fmt.Errorf("module %s does not export _start: build it as a WASI command (a program with main), not a library", m.Module)
	}
	p.fs = fsConfig(m.Permissions.AllowedPaths)
	p.reason = p.check(ctx)
	return p, nil
}

// settings validates the configuration values and collects the secrets.
func (p *plugin) settings(s Settings, getenv func(string) string) error {
	m := p.manifest
	cfg := s.Config
	if cfg == nil {
		cfg = map[string]any{}
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("plugins.%s.config: %w", m.Name, err)
	}
	p.config = raw
	if m.configSchema != nil {
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("plugins.%s.config: %w", m.Name, err)
		}
		if err := m.configSchema.Validate(doc); err != nil {
			return fmt.Errorf("plugins.%s.config in N-Agent's config.yaml does not match the plugin's config schema: %s", m.Name, oneLine(err.Error()))
		}
	} else if len(s.Config) > 0 {
		return fmt.Errorf("plugins.%s.config is set, but the plugin declares no config schema", m.Name)
	}
	p.secrets = map[string]string{}
	for _, sec := range m.Secrets {
		v, ok := s.Secrets[sec.Name]
		if !ok || v == "" {
			v = getenv(SecretEnv(m.Name, sec.Name))
		}
		if v == "" {
			if sec.Optional {
				continue
			}
			return fmt.Errorf("secret %s is not set: set plugins.%s.secrets.%s in N-Agent's config.yaml or export %s",
				sec.Name, m.Name, sec.Name, SecretEnv(m.Name, sec.Name))
		}
		p.secrets[sec.Name] = v
	}
	for _, k := range m.Permissions.Env {
		if v := getenv(k); v != "" {
			p.env = append(p.env, [2]string{k, v})
		}
	}
	return nil
}

// SecretEnv is the environment variable that can hold a plugin's secret:
// NAGENT_PLUGIN_<PLUGIN>_<SECRET>, upper-cased, with - turned into _.
func SecretEnv(plugin, secret string) string {
	return "NAGENT_PLUGIN_" + strings.ToUpper(strings.ReplaceAll(plugin, "-", "_")) + "_" + strings.ToUpper(secret)
}

// checkImports refuses imports the host does not provide, naming them.
func checkImports(cm wazero.CompiledModule) error {
	var bad []string
	for _, f := range cm.ImportedFunctions() {
		mod, name, _ := f.Import()
		switch mod {
		case wasi_snapshot_preview1.ModuleName:
		case hostModuleName:
			if _, ok := hostFunctions[name]; !ok {
				bad = append(bad, mod+"."+name)
			}
		default:
			bad = append(bad, mod+"."+name)
		}
	}
	if len(cm.ImportedMemories()) > 0 {
		bad = append(bad, "a memory")
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("imports %s, which the host does not provide; a plugin may import only wasi_snapshot_preview1 and the nagent functions in wasm/README.md", strings.Join(bad, ", "))
	}
	return nil
}

// check runs the plugin's check, if it has one, and returns why the plugin
// is unusable, or "".
func (p *plugin) check(ctx context.Context) string {
	if fn, ok := p.compiled.ExportedFunctions()[checkExport]; ok {
		if len(fn.ParamTypes()) != 0 || len(fn.ResultTypes()) != 1 || fn.ResultTypes()[0] != api.ValueTypeI32 {
			return checkExport + " must take no parameters and return an i32"
		}
		out := p.run(ctx, runSpec{entry: checkExport, tool: checkTool})
		switch {
		case out.err != nil:
			return "check failed: " + out.err.Error()
		case out.result != 0:
			why := strings.TrimSpace(string(out.stdout) + " " + string(out.stderr))
			if why == "" {
				why = fmt.Sprintf("%s returned %d", checkExport, out.result)
			}
			return truncate(why, 500)
		}
		return ""
	}
	if !p.manifest.Check {
		return ""
	}
	req, err := p.request(checkTool, json.RawMessage("{}"), tools.ExecutionContext{})
	if err != nil {
		return "check: " + err.Error()
	}
	if _, err := p.result(p.run(ctx, runSpec{entry: "_start", tool: checkTool, stdin: req})); err != nil {
		return truncate(err.Error(), 500)
	}
	return ""
}

// retire closes the plugin once its running calls end.
func (p *plugin) retire() {
	p.retired.Do(func() {
		go func() {
			p.calls.Wait()
			p.close(context.Background())
		}()
	})
}

func (p *plugin) close(ctx context.Context) {
	if p.rt != nil {
		if err := p.rt.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
			p.host.opts.Log.Warn("closing plugin runtime", "plugin", p.manifest.Name, "err", err)
		}
	}
}

func fsConfig(grants []PathGrant) wazero.FSConfig {
	cfg := wazero.NewFSConfig()
	for _, g := range grants {
		if g.Writable {
			cfg = cfg.WithDirMount(g.Host, g.Guest)
		} else {
			cfg = cfg.WithReadOnlyDirMount(g.Host, g.Guest)
		}
	}
	return cfg
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xc0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
