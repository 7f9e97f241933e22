/*
 * A tiny JSON reader for the C host test: parses a whole document into a
 * tree that remembers each value's source span (so vectors can be passed to
 * the library verbatim), decodes strings to UTF-8, and compares trees
 * structurally (objects by key set, arrays in order, numbers by value).
 */
#ifndef DSR_TEST_JSON_H
#define DSR_TEST_JSON_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { J_NULL, J_FALSE, J_TRUE, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT } jtype;

typedef struct jnode {
    jtype type;
    const char *raw;   /* the value's JSON text in the parsed document */
    size_t raw_len;
    char *str;         /* J_STRING: decoded UTF-8, NUL-terminated (may hold NULs) */
    size_t len;        /* J_STRING: decoded length in bytes */
    double num;        /* J_NUMBER */
    size_t count;      /* J_ARRAY / J_OBJECT: number of items */
    struct jnode **items;
    struct jnode **keys; /* J_OBJECT: key strings (J_STRING nodes) */
} jnode;

/* Parses `len` bytes of JSON. Returns NULL and writes a message to `err`
 * (at least 128 bytes) on failure. The tree points into `text`. */
jnode *json_parse(const char *text, size_t len, char *err);
void json_free(jnode *node);

/* Object member by NUL-terminated key, or NULL. */
const jnode *json_get(const jnode *obj, const char *key);
/* Object member by key bytes, or NULL. */
const jnode *json_getn(const jnode *obj, const char *key, size_t key_len);
/* Structural equality. `ignore_key` (nullable) is skipped in objects at any depth. */
bool json_equal(const jnode *a, const jnode *b, const char *ignore_key);
/* Whether a string node equals the given bytes. */
bool json_str_is(const jnode *s, const char *bytes, size_t len);

#endif
