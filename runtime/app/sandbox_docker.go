package app

import (
	"log/slog"

	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/sandbox/docker"
)

// The docker sandbox backend (sandbox.backend: docker, or auto when an
// engine with the image answers), configured by sandbox.docker.
func init() {
	SandboxBackends["docker"] = func(cfg *config.Config) sandbox.Backend {
		d := cfg.Sandbox.Docker
		return docker.New(docker.Config{Host: d.Host, Image: d.Image, User: d.User, CPUs: d.CPUs}, slog.Default())
	}
}
