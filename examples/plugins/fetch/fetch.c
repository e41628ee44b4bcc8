/*
 * fetch is an N-Agent plugin written in C for WASI preview 1. Build it with
 * Debian's clang and wasi-libc:
 *
 *   clang --target=wasm32-wasi -O2 -o fetch.wasm fetch.c
 *
 * It reads one JSON request on stdin and writes one JSON result on stdout
 * (see wasm/README.md). Its one tool, fetch, makes an HTTP GET through the
 * host function nagent.http_request, which the host checks against the
 * manifest's allowed_hosts and the policy. The plugin itself has no network.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((import_module("nagent"), import_name("http_request")))
int nagent_http_request(const char *req, int req_len, char *out, int out_cap);

__attribute__((import_module("nagent"), import_name("last_result")))
int nagent_last_result(char *out, int out_cap);

__attribute__((import_module("nagent"), import_name("log")))
void nagent_log(int level, const char *msg, int msg_len);

static void fail(const char *msg) {
    /* msg is a constant without quotes or backslashes. */
    printf("{\"error\":\"%s\"}\n", msg);
    exit(0);
}

static char *read_stdin(size_t *len) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        size_t r = fread(buf + n, 1, cap - n, stdin);
        if (r == 0) break;
        n += r;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* string_after returns the raw JSON string token (quotes included) that is
 * the value of the first "key" after from, or NULL. It is a scanner for this
 * example's small requests, not a JSON parser. */
static const char *string_after(const char *from, const char *key, size_t *token_len) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\"", key);
    const char *p = strstr(from, pattern);
    if (!p) return NULL;
    p += strlen(pattern);
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
    if (*p != ':') return NULL;
    p++;
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
    if (*p != '"') return NULL;
    const char *q = p + 1;
    while (*q && *q != '"') q += (*q == '\\' && q[1]) ? 2 : 1;
    if (*q != '"') return NULL;
    *token_len = (size_t)(q - p + 1);
    return p;
}

int main(void) {
    size_t len, n;
    char *req = read_stdin(&len);

    const char *tool = string_after(req, "tool", &n);
    if (!tool || n != strlen("\"fetch\"") || strncmp(tool, "\"fetch\"", n) != 0)
        fail("unknown tool; this plugin has only fetch");
    const char *args = strstr(req, "\"arguments\"");
    const char *url = args ? string_after(args, "url", &n) : NULL;
    if (!url) fail("fetch: arguments.url must be a string");

    char *call = malloc(n + 64);
    int call_len = snprintf(call, n + 64, "{\"method\":\"GET\",\"url\":%.*s}", (int)n, url);
    nagent_log(1, call, call_len);

    int cap = 64 * 1024;
    char *out = malloc(cap);
    int got = nagent_http_request(call, call_len, out, cap);
    if (got > cap) { /* the result did not fit: fetch it whole */
        out = realloc(out, got);
        got = nagent_last_result(out, got);
    }
    if (got < 0) fail("fetch: nagent.http_request failed");

    /* The host's result is {"status","headers","body"} or {"error": ...};
     * the latter is already this ABI's error shape. */
    if (strncmp(out, "{\"error\"", 8) == 0) {
        fwrite(out, 1, got, stdout);
    } else {
        fputs("{\"content\":", stdout);
        fwrite(out, 1, got, stdout);
        fputs("}\n", stdout);
    }
    return 0;
}
