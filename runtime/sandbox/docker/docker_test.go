package docker_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/sandbox/docker"
)

func containerID(t *testing.T, env sandbox.Env) string {
	t.Helper()
	id := env.(*docker.Env).ContainerID()
	if id == "" {
		t.Fatal("no container after an Exec")
	}
	return id
}

// sandboxProcesses lists the container's processes of the sandbox user, as
// the engine sees them.
func sandboxProcesses(t *testing.T, b *docker.Backend, id string) []string {
	t.Helper()
	cli, err := b.Client()
	if err != nil {
		t.Fatal(err)
	}
	top, err := cli.ContainerTop(context.Background(), id, client.ContainerTopOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range top.Processes {
		line := strings.Join(p, " ")
		if !strings.Contains(line, "sleep 2147483647") && !strings.Contains(line, "docker-init") {
			out = append(out, line)
		}
	}
	return out
}

func TestContainerReusedAcrossCalls(t *testing.T) {
	b := testBackend(t)
	s := openSession(t, b, sandbox.Limits{})
	ctx := context.Background()
	first := s.exec(ctx, "print(6*7)", time.Minute)
	if first.Reason != sandbox.ExitOK || string(first.Stdout) != "42\n" {
		t.Fatalf("first = %+v", first)
	}
	id := containerID(t, s.env)
	second := s.exec(ctx, `
import os
open("/scratch/out.txt", "w").write("second")
open("/tmp/.hidden", "w").write("second")
print(os.getcwd(), sorted(os.listdir("/scratch")))`, time.Minute)
	if got := strings.TrimSpace(string(second.Stdout)); got != "/scratch ['main.py', 'out.txt']" {
		t.Errorf("second call sees %q; want a fresh /scratch holding only its code", got)
	}
	if containerID(t, s.env) != id {
		t.Error("the second call ran in a new container")
	}
	third := s.exec(ctx, `import os; print(sorted(os.listdir("/scratch")), os.listdir("/tmp"))`, time.Minute)
	if got := strings.TrimSpace(string(third.Stdout)); got != "['main.py'] []" {
		t.Errorf("third call sees %q in /scratch and /tmp; the previous call's files leaked in", got)
	}
	if data, err := os.ReadFile(filepath.Join(s.dir, "calls", "2", "out.txt")); err != nil || string(data) != "second" {
		t.Errorf("the second call's file is not in its scratch dir: %q, %v", data, err)
	}
	if containerID(t, s.env) != id {
		t.Error("the third call ran in a new container")
	}
}

func TestContainerIsHardened(t *testing.T) {
	b := testBackend(t)
	limits := sandbox.Limits{MemoryBytes: 200 << 20, Processes: 20}
	s := openSession(t, b, limits)
	s.exec(context.Background(), "print(1)", time.Minute)
	cli, _ := b.Client()
	info, err := cli.ContainerInspect(context.Background(), containerID(t, s.env), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, c := info.Container.HostConfig, info.Container.Config
	if h.NetworkMode != "none" || !h.ReadonlyRootfs || len(h.CapDrop) != 1 || h.CapDrop[0] != "ALL" ||
		len(h.SecurityOpt) != 1 || h.SecurityOpt[0] != "no-new-privileges" {
		t.Errorf("isolation: network %q, read-only %v, cap-drop %v, security-opt %v", h.NetworkMode, h.ReadonlyRootfs, h.CapDrop, h.SecurityOpt)
	}
	if h.Memory != 200<<20 || h.MemorySwap != 200<<20 || h.PidsLimit == nil || *h.PidsLimit != 23 || h.NanoCPUs != 1e9 {
		t.Errorf("limits: memory %d swap %d pids %v cpus %d", h.Memory, h.MemorySwap, h.PidsLimit, h.NanoCPUs)
	}
	if _, ok := h.Tmpfs["/tmp"]; !ok {
		t.Errorf("no tmpfs /tmp: %v", h.Tmpfs)
	}
	if strings.HasPrefix(c.User, "0") || c.User == "" || c.User == "root" {
		t.Errorf("container user %q", c.User)
	}
	res := s.exec(context.Background(), `
import os
print(os.getuid(), os.getgid())
for p in ("/etc/passwd", "/tmp/x"):
    try:
        open(p, "a").write("x"); print("wrote", p)
    except OSError as e:
        print("blocked", p)
print(open("/proc/self/status").read().split("CapEff:")[1].split()[0])
`, time.Minute)
	want := "65534 65534\nblocked /etc/passwd\nwrote /tmp/x\n0000000000000000\n"
	if os.Geteuid() != 0 {
		want = strings.Replace(want, "65534 65534", strings.TrimSpace(string(mustOutput(t, "id", "-u")))+" "+strings.TrimSpace(string(mustOutput(t, "id", "-g"))), 1)
	}
	if string(res.Stdout) != want {
		t.Errorf("inside:\n%s\nwant:\n%s", res.Stdout, want)
	}
}

func TestSupervisorKilledStillNoSurvivors(t *testing.T) {
	b := testBackend(t)
	s := openSession(t, b, sandbox.Limits{})
	// The code starts a session-leading daemon, then kills the supervisor
	// that would have swept it.
	res := s.exec(context.Background(), `
import os, subprocess
subprocess.Popen(["sleep", "1000"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.kill(os.getppid(), 9)
`, time.Minute)
	if res.Reason == sandbox.ExitOK {
		t.Errorf("result = %+v; the supervisor was killed", res)
	}
	if left := sandboxProcesses(t, b, containerID(t, s.env)); len(left) != 0 {
		t.Errorf("processes outlived the execution: %v", left)
	}
	if res := s.exec(context.Background(), "print('alive')", time.Minute); string(res.Stdout) != "alive\n" {
		t.Errorf("next call = %+v", res)
	}
}

func TestCPULimit(t *testing.T) {
	b := testBackend(t)
	s := openSession(t, b, sandbox.Limits{CPUSeconds: 1})
	res := s.exec(context.Background(), "while True: pass", 2*time.Minute)
	if res.Reason != sandbox.ExitLimit {
		t.Errorf("CPU loop: reason %s (exit %d), want limit; stderr %s", res.Reason, res.ExitCode, res.Stderr)
	}
}

func TestCancelKillsAndKeepsTheContainer(t *testing.T) {
	b := testBackend(t)
	s := openSession(t, b, sandbox.Limits{})
	s.exec(context.Background(), "print(1)", time.Minute)
	id := containerID(t, s.env)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(2*time.Second, cancel)
	start := time.Now()
	res := s.exec(ctx, "import time\ntime.sleep(1000)", 5*time.Minute)
	if res.Reason != sandbox.ExitKilled {
		t.Errorf("cancelled: %+v, want killed", res)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("cancellation took %s", d)
	}
	if left := sandboxProcesses(t, b, id); len(left) != 0 {
		t.Errorf("processes outlived the cancelled execution: %v", left)
	}
	if res := s.exec(context.Background(), "print('alive')", time.Minute); string(res.Stdout) != "alive\n" || containerID(t, s.env) != id {
		t.Errorf("after cancel: %+v (same container: %v)", res, containerID(t, s.env) == id)
	}
}

func TestCloseRemovesContainer(t *testing.T) {
	b := testBackend(t)
	s := openSession(t, b, sandbox.Limits{})
	s.exec(context.Background(), "print(1)", time.Minute)
	id := containerID(t, s.env)
	if err := s.env.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertGone(t, b, id)
	if err := s.env.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.tryExec(context.Background(), "print(1)", time.Minute); err == nil {
		t.Error("Exec after Close succeeded")
	}
	if _, err := os.Stat(filepath.Join(s.dir, "calls", docker.LiveScratchName)); !os.IsNotExist(err) {
		t.Errorf("the live scratch dir is left after Close: %v", err)
	}
}

func TestCloseDuringExec(t *testing.T) {
	b := testBackend(t)
	s := openSession(t, b, sandbox.Limits{})
	s.exec(context.Background(), "print(1)", time.Minute)
	id := containerID(t, s.env)
	time.AfterFunc(2*time.Second, func() {
		if err := s.env.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	start := time.Now()
	res, err := s.tryExec(context.Background(), "import time\ntime.sleep(1000)", 5*time.Minute)
	if err != nil || res.Reason != sandbox.ExitKilled {
		t.Errorf("Exec during Close = %+v, %v; want reason killed", res, err)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("Close took %s to end the execution", d)
	}
	// Close may still be removing the container when Exec returns.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := inspect(b, id); cerrdefs.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	assertGone(t, b, id)
}

func TestNewScratchParentReplacesContainer(t *testing.T) {
	b := testBackend(t)
	s := openSession(t, b, sandbox.Limits{})
	s.exec(context.Background(), "print(1)", time.Minute)
	id := containerID(t, s.env)
	s.dir = t.TempDir() // the next scratch dir has another parent
	os.MkdirAll(filepath.Join(s.dir, "calls"), 0o755)
	if res := s.exec(context.Background(), "print(2)", time.Minute); string(res.Stdout) != "2\n" {
		t.Fatalf("result = %+v", res)
	}
	if containerID(t, s.env) == id {
		t.Fatal("the container was kept although its scratch mount moved")
	}
	assertGone(t, b, id)
}

func TestAvailableSaysWhatToDo(t *testing.T) {
	b := testBackend(t)
	_ = b
	missing := docker.New(docker.Config{Host: os.Getenv("NAGENT_TEST_DOCKER_HOST"), Image: "nagent-sandbox:no-such-tag"}, nil)
	if err := missing.Available(context.Background()); err == nil || !strings.Contains(err.Error(), "build-image.sh") {
		t.Errorf("missing image: %v", err)
	}
	down := docker.New(docker.Config{Host: "unix://" + filepath.Join(t.TempDir(), "none.sock")}, nil)
	if err := down.Available(context.Background()); err == nil || !strings.Contains(err.Error(), "start dockerd") {
		t.Errorf("no engine: %v", err)
	}
	root := docker.New(docker.Config{Host: os.Getenv("NAGENT_TEST_DOCKER_HOST"), User: "0:0"}, nil)
	if err := root.Available(context.Background()); err == nil || !strings.Contains(err.Error(), "root") {
		t.Errorf("root user: %v", err)
	}
}

func inspect(b *docker.Backend, id string) (container.InspectResponse, error) {
	cli, err := b.Client()
	if err != nil {
		return container.InspectResponse{}, err
	}
	r, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	return r.Container, err
}

func assertGone(t *testing.T, b *docker.Backend, id string) {
	t.Helper()
	c, err := inspect(b, id)
	if !cerrdefs.IsNotFound(err) {
		state, _ := json.Marshal(c.State)
		t.Errorf("container %s still exists (%v): %s", id, err, state)
	}
}

func mustOutput(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, err := execCommand(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRemoveStale removes the containers of a dead process of this host
// and keeps those of a live one.
func TestRemoveStale(t *testing.T) {
	b := testBackend(t)
	cli, _ := b.Client()
	ctx := context.Background()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	create := func(pid int) string {
		r, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
			Config: &container.Config{Image: docker.DefaultImage, Cmd: []string{"true"}, Labels: map[string]string{
				docker.LabelSandbox: "1", docker.LabelSession: "stale-test", docker.LabelOwner: host + ":" + strconv.Itoa(pid),
			}},
			HostConfig: &container.HostConfig{NetworkMode: "none"},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.ContainerRemove(ctx, r.ID, client.ContainerRemoveOptions{Force: true}) })
		return r.ID
	}
	stale, live := create(dead.Process.Pid), create(os.Getpid())
	if _, err := b.RemoveStale(ctx); err != nil {
		t.Fatal(err)
	}
	assertGone(t, b, stale)
	if _, err := inspect(b, live); err != nil {
		t.Errorf("the live process's container was removed: %v", err)
	}
}
