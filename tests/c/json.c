#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *s;
    size_t n, i;
    char *err;
    int depth;
} parser;

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        abort();
    }
    return p;
}

static void fail(parser *p, const char *what) {
    if (!p->err[0]) snprintf(p->err, 128, "JSON error at byte %zu: %s", p->i, what);
}

static void ws(parser *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
        p->i++;
}

static jnode *value(parser *p);

static int hex4(parser *p, unsigned *out) {
    unsigned v = 0;
    if (p->i + 4 > p->n) return 0;
    for (int k = 0; k < 4; k++) {
        char c = p->s[p->i++];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static jnode *string(parser *p) {
    size_t start = p->i++; /* the opening quote */
    /* The decoded text is never longer than the source text. */
    size_t end = p->i;
    while (end < p->n && p->s[end] != '"') end += (p->s[end] == '\\') ? 2 : 1;
    char *out = xcalloc(end - p->i + 1, 1);
    size_t o = 0;
    while (1) {
        if (p->i >= p->n) { free(out); fail(p, "unterminated string"); return NULL; }
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') { p->i++; break; }
        if (c < 0x20) { free(out); fail(p, "control character in string"); return NULL; }
        if (c != '\\') { out[o++] = (char)c; p->i++; continue; }
        p->i++;
        if (p->i >= p->n) { free(out); fail(p, "bad escape"); return NULL; }
        char e = p->s[p->i++];
        switch (e) {
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case '/': out[o++] = '/'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (!hex4(p, &cp)) { free(out); fail(p, "bad \\u escape"); return NULL; }
            if (cp >= 0xD800 && cp < 0xDC00 && p->i + 6 <= p->n && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
                size_t save = p->i;
                p->i += 2;
                if (hex4(p, &lo) && lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else p->i = save;
            }
            o += put_utf8(out + o, cp); /* a lone surrogate is kept as WTF-8 */
            break;
        }
        default: free(out); fail(p, "bad escape"); return NULL;
        }
    }
    jnode *n = xcalloc(1, sizeof *n);
    n->type = J_STRING;
    n->str = out;
    n->len = o;
    n->raw = p->s + start;
    n->raw_len = p->i - start;
    return n;
}

static jnode *number(parser *p) {
    size_t start = p->i;
    if (p->s[p->i] == '-') p->i++;
    size_t digits = p->i;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
    if (p->i == digits) { fail(p, "bad number"); return NULL; }
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        size_t f = p->i;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
        if (p->i == f) { fail(p, "bad fraction"); return NULL; }
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-')) p->i++;
        size_t e = p->i;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') p->i++;
        if (p->i == e) { fail(p, "bad exponent"); return NULL; }
    }
    char buf[400];
    size_t len = p->i - start;
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, p->s + start, len);
    buf[len] = 0;
    jnode *n = xcalloc(1, sizeof *n);
    n->type = J_NUMBER;
    n->num = strtod(buf, NULL);
    n->raw = p->s + start;
    n->raw_len = p->i - start;
    return n;
}

static jnode *container(parser *p, int object) {
    size_t start = p->i++;
    size_t cap = 8, count = 0;
    jnode **items = xcalloc(cap, sizeof *items);
    jnode **keys = object ? xcalloc(cap, sizeof *keys) : NULL;
    jnode *n = xcalloc(1, sizeof *n);
    n->type = object ? J_OBJECT : J_ARRAY;
    n->items = items;
    n->keys = keys;
    if (++p->depth > 1000) { fail(p, "too deep"); goto bad; }
    ws(p);
    if (p->i < p->n && p->s[p->i] == (object ? '}' : ']')) { p->i++; goto done; }
    while (1) {
        if (count == cap) {
            cap *= 2;
            n->items = items = realloc(items, cap * sizeof *items);
            if (object) n->keys = keys = realloc(keys, cap * sizeof *keys);
            if (!items || (object && !keys)) abort();
        }
        ws(p);
        if (object) {
            if (p->i >= p->n || p->s[p->i] != '"') { fail(p, "expected a key"); goto bad; }
            jnode *k = string(p);
            if (!k) goto bad;
            keys[count] = k;
            ws(p);
            if (p->i >= p->n || p->s[p->i] != ':') { n->count = count + 1; items[count] = NULL; fail(p, "expected ':'"); goto bad; }
            p->i++;
        }
        jnode *v = value(p);
        items[count++] = v;
        n->count = count;
        if (!v) goto bad;
        ws(p);
        if (p->i < p->n && p->s[p->i] == ',') { p->i++; continue; }
        if (p->i < p->n && p->s[p->i] == (object ? '}' : ']')) { p->i++; break; }
        fail(p, "expected ',' or a closing bracket");
        goto bad;
    }
done:
    p->depth--;
    n->count = count;
    n->raw = p->s + start;
    n->raw_len = p->i - start;
    return n;
bad:
    json_free(n);
    return NULL;
}

static jnode *literal(parser *p, const char *word, jtype type) {
    size_t len = strlen(word);
    if (p->i + len > p->n || memcmp(p->s + p->i, word, len) != 0) { fail(p, "unexpected character"); return NULL; }
    jnode *n = xcalloc(1, sizeof *n);
    n->type = type;
    n->raw = p->s + p->i;
    n->raw_len = len;
    p->i += len;
    return n;
}

static jnode *value(parser *p) {
    ws(p);
    if (p->i >= p->n) { fail(p, "unexpected end"); return NULL; }
    switch (p->s[p->i]) {
    case '{': return container(p, 1);
    case '[': return container(p, 0);
    case '"': return string(p);
    case 't': return literal(p, "true", J_TRUE);
    case 'f': return literal(p, "false", J_FALSE);
    case 'n': return literal(p, "null", J_NULL);
    default: return number(p);
    }
}

jnode *json_parse(const char *text, size_t len, char *err) {
    parser p = {text, len, 0, err, 0};
    err[0] = 0;
    jnode *n = value(&p);
    if (!n) return NULL;
    ws(&p);
    if (p.i != p.n) {
        fail(&p, "trailing text");
        json_free(n);
        return NULL;
    }
    return n;
}

void json_free(jnode *n) {
    if (!n) return;
    for (size_t i = 0; i < n->count; i++) {
        json_free(n->items[i]);
        if (n->keys) json_free(n->keys[i]);
    }
    free(n->items);
    free(n->keys);
    free(n->str);
    free(n);
}

bool json_str_is(const jnode *s, const char *bytes, size_t len) {
    return s && s->type == J_STRING && s->len == len && memcmp(s->str, bytes, len) == 0;
}

const jnode *json_getn(const jnode *obj, const char *key, size_t key_len) {
    if (!obj || obj->type != J_OBJECT) return NULL;
    const jnode *found = NULL; /* the last duplicate wins, as in JSON.parse */
    for (size_t i = 0; i < obj->count; i++)
        if (json_str_is(obj->keys[i], key, key_len)) found = obj->items[i];
    return found;
}

const jnode *json_get(const jnode *obj, const char *key) { return json_getn(obj, key, strlen(key)); }

static bool ignored(const jnode *key, const char *ignore_key) {
    return ignore_key && json_str_is(key, ignore_key, strlen(ignore_key));
}

/* Distinct keys of an object that are not ignored. */
static size_t key_count(const jnode *o, const char *ignore_key) {
    size_t c = 0;
    for (size_t i = 0; i < o->count; i++) {
        if (ignored(o->keys[i], ignore_key)) continue;
        bool dup = false;
        for (size_t j = 0; j < i; j++)
            if (json_str_is(o->keys[j], o->keys[i]->str, o->keys[i]->len)) dup = true;
        if (!dup) c++;
    }
    return c;
}

bool json_equal(const jnode *a, const jnode *b, const char *ignore_key) {
    if (!a || !b) return a == b;
    if (a->type != b->type) return false;
    switch (a->type) {
    case J_NULL: case J_TRUE: case J_FALSE: return true;
    case J_NUMBER: return a->num == b->num;
    case J_STRING: return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    case J_ARRAY:
        if (a->count != b->count) return false;
        for (size_t i = 0; i < a->count; i++)
            if (!json_equal(a->items[i], b->items[i], ignore_key)) return false;
        return true;
    case J_OBJECT:
        if (key_count(a, ignore_key) != key_count(b, ignore_key)) return false;
        for (size_t i = 0; i < a->count; i++) {
            if (ignored(a->keys[i], ignore_key)) continue;
            const jnode *av = json_getn(a, a->keys[i]->str, a->keys[i]->len);
            const jnode *bv = json_getn(b, a->keys[i]->str, a->keys[i]->len);
            if (!bv || !json_equal(av, bv, ignore_key)) return false;
        }
        return true;
    }
    return false;
}
