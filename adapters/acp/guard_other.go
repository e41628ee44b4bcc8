//go:build !unix

package acp

import "os"

// guardStdout keeps os.Stdout for the protocol and points os.Stdout at
// standard error, so a stray print lands in the log.
func guardStdout() (*os.File, error) {
	proto := os.Stdout
	os.Stdout = os.Stderr
	return proto, nil
}
