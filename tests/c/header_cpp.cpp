// Compiles the C header as C++17 (tests/c/run.sh: g++ -std=c++17 -Wall -Wextra -Werror -pedantic).
#include "dsh_session_reference.h"

#include <cstddef>
#include <type_traits>

static_assert(std::is_standard_layout<dsr_host>::value, "dsr_host is a plain C struct");
static_assert(offsetof(dsr_host, size) == 0, "the size field comes first");
static_assert(std::is_same<decltype(&dsr_resolver_prepare),
                           dsr_status (*)(const dsr_resolver *, const char *, size_t, const dsr_cancel *, char **,
                                          size_t *, dsr_error **)>::value,
              "dsr_resolver_prepare has C linkage and the documented signature");

static void list_sessions(void *, dsr_sink *sink) { dsr_sink_write(sink, "[]", 2, nullptr); }

int main() {
    dsr_host host{};
    host.size = sizeof host;
    host.flags = DSR_HOST_SERIALIZE_CALLS;
    host.list_sessions = list_sessions;
    dsr_resolver *resolver = nullptr;
    dsr_error *err = nullptr;
    if (dsr_resolver_new(&host, nullptr, 0, &resolver, &err) != DSR_OK) {
        dsr_error_free(err);
        return 1;
    }
    char *out = nullptr;
    const char req[] = R"({"target":{"id":"t"}})";
    dsr_status st = dsr_resolver_candidates(resolver, req, sizeof req - 1, nullptr, &out, nullptr, &err);
    dsr_string_free(out);
    dsr_error_free(err);
    dsr_resolver_free(resolver);
    return st == DSR_OK ? 0 : 1;
}
