package wasm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nagent/nagent/runtime/errs"
)

// ResolveSource finds the plugin directory of src: a directory holding
// plugin.yaml, a plugin.yaml file, or a .wasm file with plugin.yaml beside it.
func ResolveSource(src string) (string, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return "", errs.Errorf(errs.EINVALID, "plugin source %s: %v", src, errors.Unwrap(err))
	}
	dir := src
	if !fi.IsDir() {
		dir = filepath.Dir(src)
		if base := filepath.Base(src); base != ManifestFile && !strings.HasSuffix(base, ".wasm") {
			return "", errs.Errorf(errs.EINVALID, "plugin source %s: give a plugin directory, its plugin.yaml or its .wasm module", src)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err != nil {
		return "", errs.Errorf(errs.EINVALID, "plugin source %s: no %s in %s", src, ManifestFile, dir)
	}
	return dir, nil
}

// Install copies the plugin at src (see ResolveSource) into
// pluginsDir/<name>: its plugin.yaml and its module, nothing else. The copy
// is staged in a hidden directory, checked with verify (if not nil), and
// then moved into place with renames, so a running host never sees half a
// plugin. An installed plugin of the same name is replaced.
func Install(ctx context.Context, src, pluginsDir string, verify func(ctx context.Context, dir string) error) (*Manifest, error) {
	dir, err := ResolveSource(src)
	if err != nil {
		return nil, err
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, errs.Errorf(errs.EINVALID, "%s", strings.TrimPrefix(err.Error(), "wasm.ReadManifest: "))
	}
	module := filepath.Join(dir, m.Module)
	bin, err := os.ReadFile(module)
	if err != nil {
		return nil, errs.Errorf(errs.EINVALID, "module %s: %v (build the plugin first)", module, errors.Unwrap(err))
	}
	if _, err := inspectModule(bin); err != nil {
		return nil, errs.Errorf(errs.EINVALID, "module %s: %v", module, err)
	}
	if err := os.MkdirAll(pluginsDir, 0o755); err != nil {
		return nil, fmt.Errorf("wasm.Install: %w", err)
	}
	staging, err := os.MkdirTemp(pluginsDir, ".staging-"+m.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("wasm.Install: %w", err)
	}
	defer os.RemoveAll(staging)
	for _, name := range []string{ManifestFile, m.Module} {
		if err := copyFile(filepath.Join(dir, name), filepath.Join(staging, name)); err != nil {
			return nil, fmt.Errorf("wasm.Install: %w", err)
		}
	}
	if err := os.Chmod(staging, 0o755); err != nil {
		return nil, fmt.Errorf("wasm.Install: %w", err)
	}
	if verify != nil {
		if err := verify(ctx, staging); err != nil {
			return nil, err
		}
	}
	dest := filepath.Join(pluginsDir, m.Name)
	var old string
	if _, err := os.Stat(dest); err == nil {
		old = filepath.Join(pluginsDir, ".old-"+m.Name+"-"+filepath.Base(staging)[len(".staging-"+m.Name+"-"):])
		if err := os.Rename(dest, old); err != nil {
			return nil, fmt.Errorf("wasm.Install: %w", err)
		}
	}
	if err := os.Rename(staging, dest); err != nil {
		if old != "" {
			os.Rename(old, dest)
		}
		return nil, fmt.Errorf("wasm.Install: %w", err)
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return m, nil
}

// Remove uninstalls pluginsDir/<name>. Its key-value data stays in the
// database, for a later reinstall.
func Remove(pluginsDir, name string) error {
	if !pluginNamePattern.MatchString(name) {
		return errs.Errorf(errs.EINVALID, "%q is not a plugin name", name)
	}
	dest := filepath.Join(pluginsDir, name)
	if _, err := os.Stat(dest); err != nil {
		return errs.Errorf(errs.ENOTFOUND, "plugin %s is not installed in %s", name, pluginsDir)
	}
	// Move it aside first, so a running host sees it vanish at once.
	gone, err := os.MkdirTemp(pluginsDir, ".removed-"+name+"-")
	if err != nil {
		return fmt.Errorf("wasm.Remove: %w", err)
	}
	if err := os.Rename(dest, filepath.Join(gone, name)); err != nil {
		os.Remove(gone)
		return fmt.Errorf("wasm.Remove: %w", err)
	}
	return os.RemoveAll(gone)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
