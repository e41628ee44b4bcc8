package config

import "time"

// Web tunes the browser dashboard that `nagent serve` serves (package web).
// Zero fields take their defaults.
type Web struct {
	// ConfirmTimeout is how long a dashboard confirmation prompt waits for
	// an answer before the call is denied (default 60s).
	ConfirmTimeout Duration `yaml:"confirm_timeout"`
	// LoginTTL is how long a dashboard login lasts (default 168h).
	LoginTTL Duration `yaml:"login_ttl"`
}

// ConfirmTimeoutOrDefault returns ConfirmTimeout, or 60s when unset.
func (w Web) ConfirmTimeoutOrDefault() time.Duration {
	if w.ConfirmTimeout > 0 {
		return w.ConfirmTimeout.Std()
	}
	return 60 * time.Second
}

// LoginTTLOrDefault returns LoginTTL, or 7 days when unset.
func (w Web) LoginTTLOrDefault() time.Duration {
	if w.LoginTTL > 0 {
		return w.LoginTTL.Std()
	}
	return 7 * 24 * time.Hour
}
