package config

// Feishu configures the Feishu (Lark) bot. The bot starts with `nagent
// serve` when both the app id and the app secret are set.
type Feishu struct {
	// AppID is the bot app's id (cli_…); NAGENT_FEISHU_APP_ID overrides it.
	AppID string `yaml:"app_id"`
	// AppSecret is the bot app's secret; NAGENT_FEISHU_APP_SECRET overrides
	// it. It is never logged.
	AppSecret string `yaml:"app_secret"`
	// Domain is the open platform's base URL; empty means
	// https://open.feishu.cn (use https://open.larksuite.com for Lark).
	Domain string `yaml:"domain"`
	// ConfirmTimeout is how long a confirmation card waits for Allow or Deny
	// before the call is denied; zero means 5m.
	ConfirmTimeout Duration `yaml:"confirm_timeout"`
}

// Enabled reports whether both the app id and the app secret are set.
func (f Feishu) Enabled() bool { return f.AppID != "" && f.AppSecret != "" }

func (f *Feishu) applyEnv(getenv func(string) string) {
	if v := getenv("NAGENT_FEISHU_APP_ID"); v != "" {
		f.AppID = v
	}
	if v := getenv("NAGENT_FEISHU_APP_SECRET"); v != "" {
		f.AppSecret = v
	}
	if v := getenv("NAGENT_FEISHU_DOMAIN"); v != "" {
		f.Domain = v
	}
}
