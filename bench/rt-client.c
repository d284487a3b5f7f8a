// Realtime bench client (bench/lib/rt-native.mjs compiles it with `cc -O2` into bench/.build/ on first
// use): many SSE and WebSocket subscribers on one epoll loop, so the clients cost a small share of a
// core and the bench measures the server, not a saturated client event loop.
//
// Usage: rt-client PORT TARGETS_FILE [CONCURRENT_OPENS]
// TARGETS_FILE: one subscriber a line, `sse PATH` or `ws PATH [PROTO,PROTO…]`, all to 127.0.0.1:PORT.
// Stdout, one line each: `ready N` once every subscriber got its ready event (or `error TEXT`, then exit 1).
// Stdin commands: `count` → `count DELIVERED CLOSED`; `stop` → `lat N P50 P99 MAX` (ms, commit `at`
// of each `change` message to its receipt here; then the same for SSE only and WebSocket only), then exit.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { K_SSE, K_WS };
enum { S_IDLE, S_CONNECTING, S_HEAD, S_OPEN, S_CLOSED };

typedef struct {
  int fd, kind, state, ready, chunked, chunk_state;
  long chunk_left;
  char *path, *proto;
  char *buf;
  size_t len, cap;
  char *sbuf; // SSE: the dechunked text not yet split into frames
  size_t slen, scap;
} Conn;

static Conn *conns;
static int nconns, port, ep;
static long delivered, closed_n;
typedef struct {
  float *v;
  size_t n, cap;
} Lat;
static Lat lat[2]; // by kind: SSE, WS

static void die(const char *what) {
  printf("error %s\n", what);
  fflush(stdout);
  exit(1);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static void grow(char **p, size_t *cap, size_t need) {
  if (need <= *cap) return;
  size_t c = *cap ? *cap : 4096;
  while (c < need) c *= 2;
  *p = realloc(*p, c);
  if (!*p) die("out of memory");
  *cap = c;
}

static void append(char **p, size_t *len, size_t *cap, const char *src, size_t n) {
  grow(p, cap, *len + n);
  memcpy(*p + *len, src, n);
  *len += n;
}

// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
static long days_from_civil(long y, long m, long d) {
  y -= m <= 2;
  long era = (y >= 0 ? y : y - 399) / 400;
  long yoe = y - era * 400;
  long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/** A message's last `"at":"YYYY-MM-DDTHH:MM:SS.mmmZ"` → its latency, if it is a change. */
static void record(Conn *c, const char *p, size_t n) {
  if (!memmem(p, n, "\"type\":\"change\"", 15)) return;
  const char *at = NULL;
  for (const char *q = p; (q = memmem(q, n - (q - p), "\"at\":\"", 6)); q += 6) at = q + 6;
  delivered++;
  if (!at || (size_t)(p + n - at) < 24) return;
  int Y, M, D, h, mi, s, ms;
  if (sscanf(at, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &Y, &M, &D, &h, &mi, &s, &ms) != 7) return;
  double t = ((days_from_civil(Y, M, D) * 86400.0 + h * 3600 + mi * 60 + s) * 1000.0) + ms;
  Lat *l = &lat[c->kind];
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 1 << 20;
    l->v = realloc(l->v, l->cap * sizeof(float));
    if (!l->v) die("out of memory");
  }
  l->v[l->n++] = (float)(now_ms() - t);
}

static void sse_frames(Conn *c) {
  size_t off = 0;
  for (;;) {
    char *e = memmem(c->sbuf + off, c->slen - off, "\n\n", 2);
    if (!e) break;
    size_t n = e - (c->sbuf + off);
    const char *f = c->sbuf + off;
    if (memmem(f, n, "event: ready", 12)) c->ready = 1;
    else if (memmem(f, n, "event: change", 13)) {
      const char *d = memmem(f, n, "data: ", 6);
      if (d) record(c, d + 6, n - (d + 6 - f));
    }
    off += n + 2;
  }
  memmove(c->sbuf, c->sbuf + off, c->slen - off);
  c->slen -= off;
}

/** The response body bytes (after the head): dechunked into sbuf, then split into frames. */
static size_t sse_body(Conn *c, const char *p, size_t n) {
  if (!c->chunked) {
    append(&c->sbuf, &c->slen, &c->scap, p, n);
    sse_frames(c);
    return n;
  }
  size_t i = 0;
  while (i < n) {
    if (c->chunk_state == 0) {
      char *e = memmem(p + i, n - i, "\r\n", 2);
      if (!e) break;
      c->chunk_left = strtol(p + i, NULL, 16);
      i = e - p + 2;
      if (c->chunk_left == 0) {
        c->state = S_CLOSED;
        return n;
      }
      c->chunk_state = 1;
    } else if (c->chunk_state == 1) {
      size_t k = n - i < (size_t)c->chunk_left ? n - i : (size_t)c->chunk_left;
      append(&c->sbuf, &c->slen, &c->scap, p + i, k);
      i += k;
      c->chunk_left -= k;
      if (c->chunk_left == 0) c->chunk_state = 2;
    } else {
      if (n - i < 2) break;
      i += 2;
      c->chunk_state = 0;
    }
  }
  sse_frames(c);
  return i;
}

static void ws_send(Conn *c, int opcode, const char *p, size_t n) {
  char f[256];
  if (n > 125) n = 125;
  f[0] = (char)(0x80 | opcode);
  f[1] = (char)(0x80 | n);
  memset(f + 2, 0, 4); // note: a zero mask: the payload goes as is.
  memcpy(f + 6, p, n);
  if (write(c->fd, f, 6 + n) < 0) { /* the socket is gone; its close comes by epoll */ }
}

static size_t ws_frames(Conn *c, const char *p, size_t n) {
  size_t i = 0;
  while (n - i >= 2) {
    const unsigned char *b = (const unsigned char *)p + i;
    int op = b[0] & 0x0f;
    size_t len = b[1] & 0x7f, h = 2;
    if (len == 126) {
      if (n - i < 4) break;
      len = (b[2] << 8) | b[3];
      h = 4;
    } else if (len == 127) {
      if (n - i < 10) break;
      len = 0;
      for (int k = 2; k < 10; k++) len = (len << 8) | b[k];
      h = 10;
    }
    if (n - i < h + len) break;
    const char *d = p + i + h;
    if (op == 1) {
      if (len >= 15 && memcmp(d, "{\"type\":\"ready\"", 15) == 0) c->ready = 1;
      else record(c, d, len);
    } else if (op == 9) ws_send(c, 10, d, len);
    else if (op == 8) c->state = S_CLOSED;
    i += h + len;
  }
  return i;
}

static void on_head(Conn *c) {
  char *e = memmem(c->buf, c->len, "\r\n\r\n", 4);
  if (!e) return;
  size_t hl = e - c->buf + 4;
  const char *want = c->kind == K_SSE ? " 200" : " 101";
  if (c->len < 12 || memcmp(c->buf + 8, want, 4) != 0) {
    char line[160];
    size_t k = memchr(c->buf, '\r', c->len) ? (size_t)((char *)memchr(c->buf, '\r', c->len) - c->buf) : 0;
    if (k > 120) k = 120;
    snprintf(line, sizeof line, "%s answered %.*s", c->kind == K_SSE ? "SSE" : "WS", (int)k, c->buf);
    die(line);
  }
  c->buf[hl - 1] = 0;
  c->chunked = strcasestr(c->buf, "transfer-encoding: chunked") != NULL;
  c->state = S_OPEN;
  memmove(c->buf, c->buf + hl, c->len - hl);
  c->len -= hl;
}

static void on_read(Conn *c) {
  for (;;) {
    grow(&c->buf, &c->cap, c->len + 65536);
    ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
      closed_n++;
      c->state = S_CLOSED;
      epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
      close(c->fd);
      return;
    }
    if (r < 0) return;
    c->len += r;
    if (c->state == S_HEAD) on_head(c);
    if (c->state == S_OPEN && c->len > 0) {
      size_t used = c->kind == K_SSE ? sse_body(c, c->buf, c->len) : ws_frames(c, c->buf, c->len);
      memmove(c->buf, c->buf + used, c->len - used);
      c->len -= used;
    }
  }
}

static void start(int i) {
  Conn *c = &conns[i];
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (c->fd < 0) die("socket() failed (raise ulimit -n)");
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) die("connect() failed");
  c->state = S_CONNECTING;
  struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.u32 = (unsigned)i + 1};
  epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
}

static void send_request(Conn *c, int i) {
  int err = 0;
  socklen_t el = sizeof err;
  getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
  if (err) die("connect failed");
  char req[8192];
  int n;
  if (c->kind == K_SSE)
    n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept: text/event-stream\r\n\r\n", c->path, port);
  else
    n = snprintf(req, sizeof req,
                 "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n%s%s%s\r\n",
                 c->path, port, c->proto ? "Sec-WebSocket-Protocol: " : "", c->proto ? c->proto : "", c->proto ? "\r\n" : "");
  if (n >= (int)sizeof req || write(c->fd, req, n) != n) die("request not sent");
  c->state = S_HEAD;
  struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (unsigned)i + 1};
  epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static int cmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static void command(char *line) {
  if (strncmp(line, "count", 5) == 0) {
    printf("count %ld %ld\n", delivered, closed_n);
  } else if (strncmp(line, "stop", 4) == 0) {
    // note: all, then SSE only, then WebSocket only: N P50 P99 MAX each.
    Lat all = {malloc((lat[0].n + lat[1].n + 1) * sizeof(float)), 0, 0};
    memcpy(all.v, lat[0].v, lat[0].n * sizeof(float));
    memcpy(all.v + lat[0].n, lat[1].v, lat[1].n * sizeof(float));
    all.n = lat[0].n + lat[1].n;
    Lat *ls[3] = {&all, &lat[0], &lat[1]};
    printf("lat");
    for (int k = 0; k < 3; k++) {
      Lat *l = ls[k];
      qsort(l->v, l->n, sizeof(float), cmp);
      double p50 = l->n ? l->v[(size_t)(0.5 * l->n)] : -1, p99 = l->n ? l->v[(size_t)(0.99 * l->n)] : -1, mx = l->n ? l->v[l->n - 1] : -1;
      printf(" %zu %.3f %.3f %.3f", l->n, p50, p99, mx);
    }
    printf("\n");
    fflush(stdout);
    exit(0);
  }
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc < 3) die("usage: rt-client PORT TARGETS_FILE [CONCURRENT_OPENS]");
  port = atoi(argv[1]);
  int conc = argc > 3 ? atoi(argv[3]) : 64;
  FILE *f = fopen(argv[2], "r");
  if (!f) die("cannot read the targets file");
  char line[8192];
  int cap = 0;
  while (fgets(line, sizeof line, f)) {
    char kind[8], path[4096], proto[4096];
    int k = sscanf(line, "%7s %4095s %4095s", kind, path, proto);
    if (k < 2) continue;
    if (nconns == cap) conns = realloc(conns, (cap = cap ? cap * 2 : 1024) * sizeof(Conn));
    Conn *c = &conns[nconns++];
    memset(c, 0, sizeof *c);
    c->kind = strcmp(kind, "ws") == 0 ? K_WS : K_SSE;
    c->path = strdup(path);
    c->proto = k > 2 ? strdup(proto) : NULL;
  }
  fclose(f);
  ep = epoll_create1(0);
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  struct epoll_event sev = {.events = EPOLLIN, .data.u32 = 0};
  epoll_ctl(ep, EPOLL_CTL_ADD, 0, &sev);
  int next = 0, opening = 0, nready = 0, announced = 0;
  char cmdbuf[256];
  size_t cmdlen = 0;
  struct epoll_event evs[512];
  for (;;) {
    while (opening < conc && next < nconns) {
      start(next++);
      opening++;
    }
    if (!announced && nready == nconns) {
      printf("ready %d\n", nready);
      fflush(stdout);
      announced = 1;
    }
    int n = epoll_wait(ep, evs, 512, 1000);
    for (int e = 0; e < n; e++) {
      unsigned id = evs[e].data.u32;
      if (id == 0) {
        ssize_t r = read(0, cmdbuf + cmdlen, sizeof cmdbuf - 1 - cmdlen);
        if (r == 0) exit(0);
        if (r < 0) continue;
        cmdlen += r;
        char *nl;
        while ((nl = memchr(cmdbuf, '\n', cmdlen))) {
          *nl = 0;
          command(cmdbuf);
          size_t used = nl - cmdbuf + 1;
          memmove(cmdbuf, cmdbuf + used, cmdlen - used);
          cmdlen -= used;
        }
        if (cmdlen == sizeof cmdbuf - 1) cmdlen = 0;
        continue;
      }
      Conn *c = &conns[id - 1];
      int was = c->ready;
      if (c->state == S_CONNECTING && (evs[e].events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) send_request(c, id - 1);
      else if (c->state == S_HEAD || c->state == S_OPEN) on_read(c);
      if (!was && c->ready) {
        nready++;
        opening--;
      } else if (!c->ready && c->state == S_CLOSED) die("a subscriber was closed before its ready event");
    }
  }
}
