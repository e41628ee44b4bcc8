// Package feishu is the Feishu (Lark) bot: it keeps the open platform's long
// connection (the SDK's websocket client), turns im.message.receive_v1
// events into GatewayService messages, and answers through the im/v1
// message APIs, streaming long answers into an interactive card and asking
// for policy confirmations with Allow/Deny cards.
package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"

	"github.com/nagent/nagent/runtime/gateway"
)

// Defaults of Options.
const (
	// DefaultStreamAfter is how long an answer may stream before it moves
	// into a card; answers that finish sooner are sent as one text message.
	DefaultStreamAfter = 500 * time.Millisecond
	// DefaultUpdateInterval spaces the PATCH updates of one card. Feishu
	// allows 5 updates per second per message; 300 ms keeps us at about
	// 3.3/s, with room for the final update.
	DefaultUpdateInterval = 300 * time.Millisecond
	// DefaultConfirmTimeout is how long a confirmation card waits before the
	// call is denied.
	DefaultConfirmTimeout = 5 * time.Minute
)

// Gateway is the part of GatewayService the adapter uses.
type Gateway interface {
	Submit(ctx context.Context, msg gateway.Message, h gateway.Handler) (gateway.Ticket, error)
}

// Options configure an Adapter.
type Options struct {
	AppID     string
	AppSecret string // never logged
	// Domain is the open platform's base URL (the websocket endpoint
	// discovery and the OpenAPI); empty means lark.FeishuBaseUrl.
	Domain string
	// BotOpenID is the bot's open_id, used to see whether a group message
	// mentions the bot. Empty means ask GET /open-apis/bot/v3/info on
	// connect.
	BotOpenID string
	// StreamAfter: see DefaultStreamAfter. Negative means a card at once.
	StreamAfter time.Duration
	// UpdateInterval: see DefaultUpdateInterval.
	UpdateInterval time.Duration
	// ConfirmTimeout: see DefaultConfirmTimeout.
	ConfirmTimeout time.Duration
	// OrderWindow: see DefaultOrderWindow. Negative submits each message
	// as it arrives.
	OrderWindow time.Duration
	// HTTPClient carries the OpenAPI calls and the endpoint discovery; nil
	// means a client with a 30 s timeout.
	HTTPClient *http.Client
	Log        *slog.Logger
}

// Adapter is the Feishu bot as a gateway.Adapter.
type Adapter struct {
	gw   Gateway
	opts Options
	api  *lark.Client
	log  *slog.Logger

	mu      sync.Mutex
	botID   string
	baseCtx context.Context // the context of the current Run, for turns

	confirms confirmations
	events   *dispatcher.EventDispatcher
	order    *orderer
}

var _ gateway.Adapter = (*Adapter)(nil)

// New returns the Feishu adapter, which submits messages to gw. It fails
// when the app id or secret is missing.
func New(gw Gateway, opts Options) (*Adapter, error) {
	if opts.AppID == "" || opts.AppSecret == "" {
		return nil, errors.New("feishu: the app id and app secret are required: set feishu.app_id and feishu.app_secret in config.yaml, or NAGENT_FEISHU_APP_ID and NAGENT_FEISHU_APP_SECRET")
	}
	if opts.Domain == "" {
		opts.Domain = lark.FeishuBaseUrl
	}
	opts.Domain = strings.TrimRight(opts.Domain, "/")
	if opts.StreamAfter == 0 {
		opts.StreamAfter = DefaultStreamAfter
	}
	if opts.UpdateInterval <= 0 {
		opts.UpdateInterval = DefaultUpdateInterval
	}
	if opts.ConfirmTimeout <= 0 {
		opts.ConfirmTimeout = DefaultConfirmTimeout
	}
	if opts.OrderWindow == 0 {
		opts.OrderWindow = DefaultOrderWindow
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	log := opts.Log.With("adapter", "feishu")
	api := lark.NewClient(opts.AppID, opts.AppSecret,
		lark.WithOpenBaseUrl(opts.Domain),
		lark.WithHttpClient(opts.HTTPClient),
		lark.WithLogger(sdkLogger{log}),
		lark.WithLogLevel(larkcore.LogLevelWarn),
	)
	a := &Adapter{gw: gw, opts: opts, api: api, log: log, botID: opts.BotOpenID, baseCtx: context.Background()}
	a.confirms.pending = map[string]*pendingConfirm{}
	a.order = &orderer{window: opts.OrderWindow, submit: a.submit, chats: map[string][]inbound{}}
	// One dispatcher serves every connection; only the ws client is new
	// on each Run.
	a.events = dispatcher.NewEventDispatcher("", "")
	a.events.InitConfig(larkevent.WithLogger(sdkLogger{log}), larkevent.WithLogLevel(larkcore.LogLevelWarn))
	a.events.OnP2MessageReceiveV1(a.onMessage)
	a.events.OnP2CardActionTrigger(a.onCardAction)
	return a, nil
}

// Name implements gateway.Adapter.
func (a *Adapter) Name() string { return gateway.PlatformFeishu }

// Run implements gateway.Adapter: it opens one long connection with a new
// SDK client (a closed client cannot start again) and serves events until
// ctx ends or the connection fails. The SDK's own reconnect loop is off, so
// a failure returns here and the gateway reconnects with its backoff and
// reports the adapter's health.
func (a *Adapter) Run(ctx context.Context, up func()) error {
	a.mu.Lock()
	a.baseCtx = ctx
	a.mu.Unlock()
	if err := a.learnBotID(ctx); err != nil {
		return err
	}
	cli := larkws.NewClient(a.opts.AppID, a.opts.AppSecret,
		larkws.WithDomain(a.opts.Domain),
		larkws.WithEventHandler(a.events),
		larkws.WithAutoReconnect(false),
		larkws.WithHttpClient(a.opts.HTTPClient),
		larkws.WithLogger(sdkLogger{a.log}),
		larkws.WithLogLevel(larkcore.LogLevelWarn),
		larkws.WithOnReady(up),
	)
	err := cli.Start(ctx)
	if ctx.Err() != nil {
		return nil
	}
	if err == nil {
		err = errors.New("the long connection closed")
	}
	var refused *larkws.ClientError
	if errors.As(err, &refused) {
		// The platform refused us (bad credentials, no long-connection
		// subscription, too many connections): retrying will not help until
		// the setting is fixed, but the gateway keeps trying with backoff.
		return fmt.Errorf("feishu: long connection refused: %w (check feishu.app_id and feishu.app_secret, and that the app receives events through the persistent connection)", err)
	}
	return fmt.Errorf("feishu: long connection: %w", err)
}

// learnBotID asks the platform for the bot's open_id unless it is known.
func (a *Adapter) learnBotID(ctx context.Context) error {
	a.mu.Lock()
	known := a.botID != ""
	a.mu.Unlock()
	if known {
		return nil
	}
	resp, err := a.api.Get(ctx, "/open-apis/bot/v3/info", nil, larkcore.AccessTokenTypeTenant)
	if err != nil {
		return fmt.Errorf("feishu: bot info: %w (check feishu.app_id and feishu.app_secret, and that %s is reachable)", err, a.opts.Domain)
	}
	var info struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
		Bot  struct {
			OpenID string `json:"open_id"`
		} `json:"bot"`
	}
	if err := json.Unmarshal(resp.RawBody, &info); err != nil {
		return fmt.Errorf("feishu: bot info: HTTP %d: %w", resp.StatusCode, err)
	}
	if info.Code != 0 || info.Bot.OpenID == "" {
		return fmt.Errorf("feishu: bot info: code %d: %s (check the app id and secret, and that the app has the bot capability)", info.Code, info.Msg)
	}
	a.mu.Lock()
	a.botID = info.Bot.OpenID
	a.mu.Unlock()
	return nil
}

func (a *Adapter) botOpenID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botID
}

// turnContext is the context turns run under: the current Run's, which
// outlives a dropped connection (answers go through the OpenAPI).
func (a *Adapter) turnContext() context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.baseCtx
}

// SendText posts text to the chat chatID as a new message (the scheduler's
// Feishu delivery).
func (a *Adapter) SendText(ctx context.Context, chatID, text string) error {
	content, _ := json.Marshal(map[string]string{"text": truncate(text, maxTextBytes)})
	resp, err := a.api.Im.V1.Message.Create(ctx, larkim.NewCreateMessageReqBuilder().
		ReceiveIdType("chat_id").
		Body(larkim.NewCreateMessageReqBodyBuilder().
			ReceiveId(chatID).MsgType(larkim.MsgTypeText).Content(string(content)).Uuid(newID()).Build()).
		Build())
	if err != nil {
		return fmt.Errorf("feishu: send to chat %s: %w", chatID, err)
	}
	if !resp.Success() {
		return fmt.Errorf("feishu: send to chat %s: code %d: %s", chatID, resp.Code, resp.Msg)
	}
	return nil
}

// sdkLogger routes the SDK's logs to slog. The SDK never gets the secret
// in a log line: its request logging is off.
type sdkLogger struct{ log *slog.Logger }

func (l sdkLogger) Debug(ctx context.Context, args ...any) {
	l.log.DebugContext(ctx, fmt.Sprint(args...))
}
func (l sdkLogger) Info(ctx context.Context, args ...any) {
	l.log.InfoContext(ctx, fmt.Sprint(args...))
}
func (l sdkLogger) Warn(ctx context.Context, args ...any) {
	l.log.WarnContext(ctx, fmt.Sprint(args...))
}
func (l sdkLogger) Error(ctx context.Context, args ...any) {
	l.log.ErrorContext(ctx, fmt.Sprint(args...))
}
