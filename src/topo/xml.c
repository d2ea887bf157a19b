/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL's topology XML: reader and writer (xml.h). The reader walks the text once, keeping the
 * open element as `cur` (no recursion, so a deep file cannot exhaust the stack). */
#include "topo/xml.h"
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "util/check.h"

/* A topology file describes one host: anything this large or this deep is not one (and the
 * tree's walkers recurse by depth). */
#define XML_MAX_FILE_BYTES ((size_t)64 << 20)
#define XML_MAX_DEPTH      64

struct reader {
  const char* p;
  const char* end;
  const char* start;
  char* why;
  size_t whylen;
  int failed;
};

static int line_of(const struct reader* r, const char* at) {
  int line = 1;
  for (const char* q = r->start; q < at && q < r->end; q++) line += *q == '\n';
  return line;
}

static void fail(struct reader* r, const char* fmt, ...) {
  if (r->failed) return;
  r->failed = 1;
  int n = snprintf(r->why, r->whylen, "line %d: ", line_of(r, r->p));
  if (n < 0 || (size_t)n >= r->whylen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->why + n, r->whylen - (size_t)n, fmt, ap);
  va_end(ap);
}

static int is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}
static int is_name(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == ':' || c == '.';
}
static int starts(const struct reader* r, const char* s) {
  size_t n = strlen(s);
  return (size_t)(r->end - r->p) >= n && memcmp(r->p, s, n) == 0;
}

/* Blank space, comments and (before the root) declarations. */
static void skip_filler(struct reader* r, int allow_decl) {
  for (;;) {
    while (r->p < r->end && is_blank(*r->p)) r->p++;
    const char* close = NULL;
    if (starts(r, "<!--"))
      close = "-->";
    else if (allow_decl && starts(r, "<?"))
      close = "?>";
    if (close == NULL) return;
    const char* q = r->p + 2;
    size_t n = strlen(close);
    while (q + n <= r->end && memcmp(q, close, n) != 0) q++;
    if (q + n > r->end) {
      fail(r, "a comment or declaration is not closed (no '%s')", close);
      return;
    }
    r->p = q + n;
  }
}

static char* dup_range(const char* a, const char* b) {
  char* s = malloc((size_t)(b - a) + 1);
  if (s == NULL) return NULL;
  memcpy(s, a, (size_t)(b - a));
  s[b - a] = '\0';
  return s;
}

/* A name at r->p (NULL with a failure if there is none). */
static char* read_name(struct reader* r, const char* what) {
  const char* a = r->p;
  while (r->p < r->end && is_name(*r->p)) r->p++;
  if (r->p == a) {
    if (r->p < r->end)
      fail(r, "expected %s, found '%c'", what, *r->p);
    else
      fail(r, "expected %s, found the end of the file", what);
    return NULL;
  }
  char* s = dup_range(a, r->p);
  if (s == NULL) fail(r, "out of memory");
  return s;
}

/* Attributes up to '>' or "/>"; *closed is 1 for "/>". */
static void read_attrs(struct reader* r, struct topo_xml* x, int* closed) {
  for (;;) {
    while (r->p < r->end && is_blank(*r->p)) r->p++;
    if (r->p >= r->end) {
      fail(r, "element <%s> is not finished (the file ends inside it)", x->name);
      return;
    }
    if (*r->p == '>' || starts(r, "/>")) {
      *closed = *r->p == '/';
      r->p += *closed ? 2 : 1;
      return;
    }
    char* name = read_name(r, "an attribute name or '>'");
    if (name == NULL) return;
    while (r->p < r->end && is_blank(*r->p)) r->p++;
    char q = r->p + 1 < r->end && *r->p == '=' ? r->p[1] : 0;
    if (q != '"' && q != '\'') {
      fail(r, "attribute %s of <%s> needs a value in quotes (%s=\"...\")", name, x->name, name);
      free(name);
      return;
    }
    const char* a = r->p + 2;
    const char* b = memchr(a, q, (size_t)(r->end - a));
    if (b == NULL) {
      fail(r, "the value of attribute %s of <%s> is not closed", name, x->name);
      free(name);
      return;
    }
    if (topo_xml_get(x, name) != NULL) {
      fail(r, "attribute %s appears twice in <%s>", name, x->name);
      free(name);
      return;
    }
    char* value = dup_range(a, b);
    r->p = b + 1;
    if (value == NULL || topo_xml_set(x, name, value) != ncclSuccess) fail(r, "out of memory");
    free(name);
    free(value);
    if (r->p < r->end && !is_blank(*r->p) && *r->p != '>' && *r->p != '/')
      fail(r, "attributes of <%s> must be separated by a space", x->name);
    if (r->failed) return;
  }
}

static struct topo_xml* parse_all(struct reader* r) {
  struct topo_xml* root = NULL;
  struct topo_xml* cur = NULL;
  int depth = 0;
  skip_filler(r, 1);
  while (!r->failed) {
    skip_filler(r, 0);
    if (r->failed) break;
    if (r->p >= r->end) {
      if (root == NULL) fail(r, "the file holds no element (expected <system version=\"1\">)");
      if (cur != NULL) fail(r, "element <%s> is not closed (expected </%s>)", cur->name, cur->name);
      break;
    }
    if (*r->p != '<') {
      fail(r, "expected '<', found '%c' (text is not allowed between elements)", *r->p);
      break;
    }
    r->p++;
    if (r->p < r->end && *r->p == '/') {
      r->p++;
      char* name = read_name(r, "the name of a close tag");
      if (name == NULL) break;
      if (cur == NULL || strcmp(name, cur->name) != 0) {
        if (cur == NULL)
          fail(r, "close tag </%s> without an open element", name);
        else
          fail(r, "close tag </%s> where </%s> was expected", name, cur->name);
      } else if (r->p >= r->end || *r->p != '>') {
        fail(r, "close tag </%s> must end right after its name with '>'", name);
      } else {
        r->p++;
        cur = cur->parent;
        depth--;
      }
      free(name);
      continue;
    }
    if (root != NULL && cur == NULL) {
      fail(r, "a second top-level element: the file must hold one <system>");
      break;
    }
    char* name = read_name(r, "an element name");
    if (name == NULL) break;
    struct topo_xml* x = topo_xml_new(name);
    free(name);
    if (x == NULL) {
      fail(r, "out of memory");
      break;
    }
    if (cur == NULL)
      root = x;
    else if (topo_xml_add(cur, x, 0) != ncclSuccess) {
      topo_xml_free(x);
      fail(r, "out of memory");
      break;
    }
    int closed = 0;
    read_attrs(r, x, &closed);
    if (!closed) {
      cur = x;
      if (++depth > XML_MAX_DEPTH) fail(r, "elements nest deeper than %d levels", XML_MAX_DEPTH);
    }
  }
  if (r->failed) {
    topo_xml_free(root);
    return NULL;
  }
  return root;
}

ncclResult_t topo_xml_parse(const char* text, size_t len, struct topo_xml** out, char* why,
                            size_t whylen) {
  char none[8];
  struct reader r = {.p = text,
                     .end = text + len,
                     .start = text,
                     .why = why ? why : none,
                     .whylen = why ? whylen : sizeof none};
  *out = NULL;
  if (r.whylen) r.why[0] = '\0';
  *out = parse_all(&r);
  return *out ? ncclSuccess : ncclInvalidArgument;
}

ncclResult_t topo_xml_load(const char* path, struct topo_xml** out) {
  ncclResult_t res = ncclSuccess;
  char* text = NULL;
  char why[256];
  size_t len = 0;
  *out = NULL;
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    WARN("could not open the topology file %s: %s; fix NCCL_TOPO_FILE or unset it", path,
         strerror(errno));
    return ncclSystemError;
  }
  size_t cap = 1 << 16;
  text = malloc(cap);
  while (text != NULL) {
    size_t n = fread(text + len, 1, cap - len, f);
    len += n;
    if (n == 0) break;
    if (len == cap) {
      char* t = cap < XML_MAX_FILE_BYTES ? realloc(text, cap * 2) : NULL;
      if (t == NULL) {
        WARN("the topology file %s is larger than %zu bytes or memory ran out: a topology file "
             "describes one host",
             path, cap);
        res = ncclInvalidArgument;
        goto out;
      }
      text = t;
      cap *= 2;
    }
  }
  if (text == NULL || ferror(f)) {
    WARN("could not read the topology file %s", path);
    res = ncclSystemError;
    goto out;
  }
  if (topo_xml_parse(text, len, out, why, sizeof why) != ncclSuccess) {
    WARN("the topology file %s is not valid NCCL topology XML: %s; fix it or unset "
         "NCCL_TOPO_FILE",
         path, why);
    res = ncclInvalidArgument;
  }
out:
  free(text);
  fclose(f);
  return res;
}

static void write_one(const struct topo_xml* x, FILE* f, int depth) {
  fprintf(f, "%*s<%s", 2 * depth, "", x->name);
  for (int i = 0; i < x->nattrs; i++) fprintf(f, " %s=\"%s\"", x->attrs[i].name, x->attrs[i].value);
  if (x->nkids == 0) {
    fprintf(f, "/>\n");
    return;
  }
  fprintf(f, ">\n");
  for (int i = 0; i < x->nkids; i++) write_one(x->kids[i], f, depth + 1);
  fprintf(f, "%*s</%s>\n", 2 * depth, "", x->name);
}

ncclResult_t topo_xml_write(const struct topo_xml* x, FILE* f) {
  write_one(x, f, 0);
  return ferror(f) ? ncclSystemError : ncclSuccess;
}

ncclResult_t topo_xml_save(const struct topo_xml* x, const char* path) {
  FILE* f = fopen(path, "w");
  if (f == NULL) {
    INFO(LOG_INIT | LOG_GRAPH, "could not write the topology dump %s: %s", path, strerror(errno));
    return ncclSystemError;
  }
  ncclResult_t res = topo_xml_write(x, f);
  if (fclose(f) != 0) res = ncclSystemError;
  return res;
}

struct topo_xml* topo_xml_new(const char* name) {
  struct topo_xml* x = calloc(1, sizeof *x);
  if (x == NULL) return NULL;
  x->name = strdup(name);
  if (x->name == NULL) {
    free(x);
    return NULL;
  }
  return x;
}

ncclResult_t topo_xml_add(struct topo_xml* parent, struct topo_xml* kid, int sorted_by_busid) {
  struct topo_xml** k = parent->kids;
  if (parent->nkids == parent->cap_kids) {
    int cap = parent->cap_kids ? 2 * parent->cap_kids : 4;
    k = realloc(parent->kids, sizeof *k * (size_t)cap);
    if (k == NULL) {
      WARN("out of host memory building the topology");
      return ncclSystemError;
    }
    parent->kids = k;
    parent->cap_kids = cap;
  }
  int at = parent->nkids;
  const char* id = sorted_by_busid ? topo_xml_get(kid, "busid") : NULL;
  if (id != NULL) {
    while (at > 0) {
      const char* o = topo_xml_get(k[at - 1], "busid");
      if (o != NULL && strcmp(o, id) <= 0) break;
      at--;
    }
  }
  memmove(k + at + 1, k + at, sizeof *k * (size_t)(parent->nkids - at));
  k[at] = kid;
  parent->nkids++;
  kid->parent = parent;
  return ncclSuccess;
}

void topo_xml_unlink(struct topo_xml* x) {
  struct topo_xml* p = x->parent;
  if (p == NULL) return;
  for (int i = 0; i < p->nkids; i++) {
    if (p->kids[i] != x) continue;
    memmove(p->kids + i, p->kids + i + 1, sizeof *p->kids * (size_t)(p->nkids - i - 1));
    p->nkids--;
    break;
  }
  x->parent = NULL;
}

void topo_xml_free(struct topo_xml* x) {
  if (x == NULL) return;
  for (int i = 0; i < x->nkids; i++) {
    x->kids[i]->parent = NULL;
    topo_xml_free(x->kids[i]);
  }
  for (int i = 0; i < x->nattrs; i++) {
    free(x->attrs[i].name);
    free(x->attrs[i].value);
  }
  free(x->attrs);
  free(x->kids);
  free(x->name);
  free(x);
}

const char* topo_xml_get(const struct topo_xml* x, const char* name) {
  for (int i = 0; i < x->nattrs; i++)
    if (strcmp(x->attrs[i].name, name) == 0) return x->attrs[i].value;
  return NULL;
}

ncclResult_t topo_xml_set(struct topo_xml* x, const char* name, const char* value) {
  char* v = strdup(value);
  if (v == NULL) goto oom;
  for (int i = 0; i < x->nattrs; i++) {
    if (strcmp(x->attrs[i].name, name) != 0) continue;
    free(x->attrs[i].value);
    x->attrs[i].value = v;
    return ncclSuccess;
  }
  struct topo_attr* a = realloc(x->attrs, sizeof *a * (size_t)(x->nattrs + 1));
  char* n = strdup(name);
  if (a != NULL) x->attrs = a;
  if (a == NULL || n == NULL) {
    free(n);
    free(v);
    goto oom;
  }
  a[x->nattrs].name = n;
  a[x->nattrs].value = v;
  x->nattrs++;
  return ncclSuccess;
oom:
  WARN("out of host memory building the topology");
  return ncclSystemError;
}

ncclResult_t topo_xml_fill(struct topo_xml* x, const char* name, const char* value) {
  if (topo_xml_get(x, name) != NULL) return ncclSuccess;
  return topo_xml_set(x, name, value);
}

struct topo_xml* topo_xml_find(struct topo_xml* x, const char* name, const char* attr,
                               const char* value) {
  if (strcmp(x->name, name) == 0) {
    const char* v = attr ? topo_xml_get(x, attr) : NULL;
    if (attr == NULL || (v != NULL && strcmp(v, value) == 0)) return x;
  }
  for (int i = 0; i < x->nkids; i++) {
    struct topo_xml* f = topo_xml_find(x->kids[i], name, attr, value);
    if (f != NULL) return f;
  }
  return NULL;
}

struct topo_xml* topo_xml_child(const struct topo_xml* x, const char* name) {
  for (int i = 0; i < x->nkids; i++)
    if (strcmp(x->kids[i]->name, name) == 0) return x->kids[i];
  return NULL;
}
