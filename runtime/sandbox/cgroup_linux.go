//go:build linux

package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupRoot is where the cgroup v1 controllers are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroups is one session's set of cgroup v1 groups, each a child of the
// group this process is in for that controller: pids (the process cap,
// required as root), memory (the whole tree's memory) and cpu (a CPU-time
// share), the last two when available.
type cgroups struct {
	pids, memory, cpu string // "" when not in use
}

// ownGroup returns the directory of the group this process is in for a v1
// controller, e.g. /sys/fs/cgroup/memory/process_api/abc.
func ownGroup(root, controller string) (string, bool) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				dir := filepath.Join(root, controller, parts[2])
				if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err == nil {
					return dir, true
				}
			}
		}
	}
	return "", false
}

// makeGroup creates a child group named for session under controller and
// writes settings into it; it returns "" when the controller is unusable.
func makeGroup(root, controller, session string, settings [][2]string) (string, error) {
	parent, ok := ownGroup(root, controller)
	if !ok {
		return "", nil
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	dir := filepath.Join(parent, "nagent-"+safeName(session, 40)+"-"+hex.EncodeToString(rnd[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", nil // not writable here: the caller decides whether that is fatal
	}
	for _, kv := range settings {
		if err := os.WriteFile(filepath.Join(dir, kv[0]), []byte(kv[1]), 0); err != nil {
			os.Remove(dir)
			return "", fmt.Errorf("sandbox local: cgroup %s: set %s: %w", controller, kv[0], err)
		}
	}
	return dir, nil
}

// newCgroups makes the groups of one session.
func newCgroups(root, session string, l Limits, cpus float64) (*cgroups, error) {
	cg := &cgroups{}
	var err error
	if cg.pids, err = makeGroup(root, "pids", session, [][2]string{{"pids.max", strconv.Itoa(l.Processes)}}); err != nil {
		return nil, err
	}
	// Memory and CPU are best effort: the rlimits still bound each process.
	cg.memory, _ = makeGroup(root, "memory", session, [][2]string{{"memory.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10)}})
	if cpus > 0 {
		cg.cpu, _ = makeGroup(root, "cpu", session, [][2]string{
			{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", strconv.Itoa(max(int(cpus*100000), 1000))},
		})
	}
	return cg, nil
}

// procsFiles are the cgroup.procs files an execution joins.
func (cg *cgroups) procsFiles() []string {
	var out []string
	for _, d := range []string{cg.pids, cg.memory, cg.cpu} {
		if d != "" {
			out = append(out, filepath.Join(d, "cgroup.procs"))
		}
	}
	return out
}

// counter reads a single-number file of a group (0 when absent).
func counter(dir, file string) int64 {
	if dir == "" {
		return 0
	}
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[len(f)-1], 10, 64) // pids.events is "max N"
	return n
}

// remove deletes the groups, sweeping stragglers first.
func (cg *cgroups) remove(sweep func()) error {
	var errs []error
	for _, d := range []string{cg.pids, cg.memory, cg.cpu} {
		if d == "" {
			continue
		}
		var err error
		for range 100 {
			if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			sweep()
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sandbox local: remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
