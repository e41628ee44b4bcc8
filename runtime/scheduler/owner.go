package scheduler

import (
	"os"
	"strconv"
	"strings"
)

// thisOwner names this process on schedule runs it claims.
var thisOwner = ownerName()

func ownerName() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}

// ownerGone reports whether owner names a process of this host that no
// longer runs. Owners from other hosts, or unnamed ones, are never judged
// gone: their runs end by the run timeout instead.
func ownerGone(owner string) bool {
	host, pid, ok := strings.Cut(owner, ":")
	if !ok || owner == thisOwner {
		return false
	}
	if me, _ := os.Hostname(); host != me {
		return false
	}
	n, err := strconv.Atoi(pid)
	return err == nil && n > 0 && !processAlive(n)
}
