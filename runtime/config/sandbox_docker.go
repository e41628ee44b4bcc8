package config

// SandboxDocker configures the docker sandbox backend
// (runtime/sandbox/docker), under sandbox.docker in config.yaml:
//
//	sandbox:
//	  backend: docker
//	  docker:
//	    host: unix:///var/run/docker.sock  # default: $DOCKER_HOST, then the engine's default
//	    image: nagent-sandbox:debian       # build: runtime/sandbox/docker/testdata/build-image.sh
//	    user: "65534:65534"                # default: the server's uid:gid, or 65534 when root
//	    cpus: 1
type SandboxDocker struct {
	// Host is the Docker Engine address.
	Host string `yaml:"host"`
	// Image is the sandbox image (python3 and busybox sh).
	Image string `yaml:"image"`
	// User is the non-root uid:gid the code runs as.
	User string `yaml:"user"`
	// CPUs caps each session's container (0 means 1).
	CPUs float64 `yaml:"cpus"`
}
