// ---- s2s harness: generic part (templates/s2s_harness_common.cuh) -----------------------------
// Everything here is independent of the kernel: random fills, element visitors, comparison,
// guards, statistics, JSON output. The generated part below it names the kernel's buffers.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef S2S_HIP
#include "cuda_on_hip.h"
#else
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif

namespace s2s {

// ---- options --------------------------------------------------------------------------------
struct Options {
    bool time = true, check = true, post_check = true;
    bool probe = true;  // --no-probe: the caller holds a record of this reference's bounds probe (s2s/mep/probe_record.py)
    std::string ref_cache;  // --ref-cache DIR: the reference's outputs per input set, kept across runs (Run::load_reference)
    int input_sets = 3, reps = 30, warmup = 3;  // reps, warmup: the most timed and warm-up pairs
    double target_s = 0.5;  // [timing] target_s: device seconds the timed pairs aim at (timed_pairs); 0: always reps
    unsigned long long seed = 1234;
    bool has_seed = false;  // --seed or $S2S_SEED; otherwise fresh from std::random_device every run
    double rtol = 1e-3, atol = 1e-4;  // [check]'s; each buffer has its own (BufSpec) unless --rtol/--atol is given
    bool has_rtol = false, has_atol = false;
    dim3 var_grid, var_block;  // the variant's launch, where given (else the reference's)
    size_t var_shmem = 0;
    bool has_grid = false, has_block = false, has_shmem = false;
};

// ---- JSON -----------------------------------------------------------------------------------
inline std::string jstr(const std::string& s) {
    std::string o = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') { o += '\\'; o += (char)c; }
        else if (c == '\n') o += "\\n";
        else if (c == '\t') o += "\\t";
        else if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; }
        else o += (char)c;
    }
    return o + "\"";
}
inline std::string jnum(double v) {
    if (std::isnan(v)) return "\"nan\"";
    if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
    char b[64]; snprintf(b, sizeof b, "%.9g", v); return b;
}
inline std::string fmt(double v) { char b[64]; snprintf(b, sizeof b, "%.7g", v); return b; }

inline void phase(const std::string& what) { fprintf(stderr, "S2S_PHASE %s\n", what.c_str()); fflush(stderr); }

// ---- the device lock shared with other evaluations on this machine (s2s/base/devicelock.py) ----
// Where $S2S_HARNESS_LOCK names it: the checks hold it shared (several evaluations check side by side), the timing
// exclusive (nothing else uses the device while a kernel is timed). PATH.turn is the turnstile that lets a waiting
// timing in before checks that arrive after it. The wait is the phase "waiting for the device", which the caller's
// time limit does not count.
struct DeviceLock {
    int fd = -1, turn = -1;
    DeviceLock() {
        const char* path = getenv("S2S_HARNESS_LOCK");
        if (!path || !*path) return;
        fd = open(path, O_RDWR | O_CREAT, 0666);
        turn = open((std::string(path) + ".turn").c_str(), O_RDWR | O_CREAT, 0666);
        if (fd < 0 || turn < 0) {
            fprintf(stderr, "s2s: cannot open the device lock %s; running without it\n", path);
            close_all();
        }
    }
    ~DeviceLock() { close_all(); }
    void close_all() {
        if (fd >= 0) close(fd);
        if (turn >= 0) close(turn);
        fd = turn = -1;
    }
    void hold(bool exclusive, const char* what) {
        if (fd < 0) return;
        phase(std::string("waiting for the device (") + what + ")");
        flock(turn, LOCK_EX);
        flock(fd, exclusive ? LOCK_EX : LOCK_SH);
        flock(turn, LOCK_UN);
        phase(std::string("device held (") + what + ")");
    }
    // the device given back: what follows until the next hold is the host's own work for `what`
    void release(const char* what) {
        if (fd < 0) return;
        flock(fd, LOCK_UN);
        host(what);
    }
    // the phase of host work (fills, comparisons, setup), printed only where the lock is in use, like the holds
    void host(const char* what) const {
        if (fd >= 0) phase(std::string("host work (") + what + ")");
    }
};

// the device held for one stretch of GPU work (released when the scope ends, an exception included): a check holds it
// shared only around its uploads, launches and downloads, never around the host's fills and comparisons, so that a
// timing waiting for the device waits for GPU work only
struct Held {
    DeviceLock& lock;
    const char* what;
    Held(DeviceLock& l, bool exclusive, const char* w) : lock(l), what(w) { lock.hold(exclusive, w); }
    ~Held() { lock.release(what); }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
};

// ---- random numbers: splitmix64, one stream per (seed, buffer) -------------------------------
struct Rng {
    unsigned long long s;
    explicit Rng(unsigned long long seed, unsigned long long stream)
        : s(seed * 0x9E3779B97F4A7C15ULL ^ (stream + 1) * 0xD1B54A32D192ED03ULL) {}
    unsigned long long next() {
        unsigned long long z = (s += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    double unit() { return (double)(next() >> 11) * (1.0 / 9007199254740992.0); }
    void skip(unsigned long long draws) { s += draws * 0x9E3779B97F4A7C15ULL; }  // as if next() had been called `draws` times
};

// fn(lo, hi) -> Part over [0, n) in contiguous chunks on the host's cores (one chunk below 1M elements), the parts in
// the order of their ranges (for merging): the host's comparisons of a large output took seconds per input set on one
// core (transpose_2d: 4.5 s an evaluation)
template <class Part, class Fn> std::vector<Part> map_chunks(size_t n, Fn fn) {
    const size_t hw = std::max(1u, std::thread::hardware_concurrency());
    const size_t nt = std::min<size_t>(std::min<size_t>(hw, 32), n / (1u << 20) + 1);
    if (nt <= 1) return {fn(size_t(0), n)};
    const size_t chunk = (n + nt - 1) / nt;
    std::vector<Part> parts((n + chunk - 1) / chunk);
    std::vector<std::thread> ts;
    for (size_t j = 0; j < parts.size(); ++j)
        ts.emplace_back([&, j]() { parts[j] = fn(j * chunk, std::min(n, (j + 1) * chunk)); });
    for (std::thread& t : ts) t.join();
    return parts;
}

// body(lo, hi) over the same chunks: filling the inputs of a large MEP one element at a time took seconds per input
// set, longer than everything the GPU does
template <class Body> void parallel_chunks(size_t n, Body body) {
    map_chunks<char>(n, [&](size_t lo, size_t hi) { body(lo, hi); return char(0); });
}

// ---- element visitors: every scalar component of an element, in order ---------------------------
template <class T> struct dependent_false : std::false_type {};
template <class T, class = void> struct has_x : std::false_type {};
template <class T> struct has_x<T, std::void_t<decltype(std::declval<T&>().x)>> : std::true_type {};
template <class T, class = void> struct has_y : std::false_type {};
template <class T> struct has_y<T, std::void_t<decltype(std::declval<T&>().y)>> : std::true_type {};
template <class T, class = void> struct has_z : std::false_type {};
template <class T> struct has_z<T, std::void_t<decltype(std::declval<T&>().z)>> : std::true_type {};
template <class T, class = void> struct has_w : std::false_type {};
template <class T> struct has_w<T, std::void_t<decltype(std::declval<T&>().w)>> : std::true_type {};

template <class T, class F> void visit_prim(T& v, F& f) {
    if constexpr (std::is_enum_v<T>) {
        std::underlying_type_t<T> u = static_cast<std::underlying_type_t<T>>(v); f(u); v = static_cast<T>(u);
    } else if constexpr (std::is_arithmetic_v<T>) {
        f(v);
    } else if constexpr (std::is_same_v<T, __half>) {
        float t = __half2float(v); f(t); v = __float2half(t);
#ifndef S2S_HIP
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        float t = __bfloat162float(v); f(t); v = __float2bfloat16(t);
#endif
    } else if constexpr (std::is_array_v<T>) {
        for (auto& e : v) visit_prim(e, f);
    } else if constexpr (has_x<T>::value) {  // CUDA vector types: float2, int4, double3 ...
        visit_prim(v.x, f);
        if constexpr (has_y<T>::value) visit_prim(v.y, f);
        if constexpr (has_z<T>::value) visit_prim(v.z, f);
        if constexpr (has_w<T>::value) visit_prim(v.w, f);
    } else if constexpr (std::is_trivially_copyable_v<T> && sizeof(T) % sizeof(float) == 0 && alignof(T) >= alignof(float)) {
        // a struct whose fields mep.toml does not list (a class template's instance, an over-aligned struct): filled and
        // compared word by word as floats (an integer field then holds a float's bits on generated inputs); captured
        // data are replayed as they are
        float* w = reinterpret_cast<float*>(&v);
        for (size_t k = 0; k < sizeof(T) / sizeof(float); ++k) f(w[k]);
    } else {
        static_assert(dependent_false<T>::value,
                      "s2s: an element type is neither arithmetic, a vector type, a struct listed in [[structs]] of mep.toml, "
                      "nor a trivially copyable struct of whole words");
    }
}

struct VisitPrim {
    template <class S, class F> void operator()(S& v, F& f) const { visit_prim(v, f); }
};

// fill modes of ParamSpec.fill
// FILL_SHUFFLE: the application's own values of the first captured set, in an order drawn from the seed (integers a
// captured kernel may index memory with or bound loops by stay values it can take); every such buffer of one length is
// reordered alike, so values that are valid together (a cell's start and end) stay together; uniform where nothing
// was captured
enum FillMode { FILL_UNIFORM = 0, FILL_INDEX = 1, FILL_ZEROS = 2, FILL_OFFSETS = 3, FILL_SHUFFLE = 4 };

struct Filler {
    Rng* rng; double lo, hi; int mode;
    template <class T> void operator()(T& x) {
        if (mode == FILL_ZEROS) { x = T(0); return; }
        if constexpr (std::is_same_v<T, bool>) {
            x = (rng->next() & 1) != 0;
        } else if constexpr (std::is_floating_point_v<T>) {
            double a = mode == FILL_INDEX ? 0.0 : lo, b = hi;
            x = T(a + (b - a) * rng->unit());
        } else {
            long long a = mode == FILL_INDEX ? 0 : (long long)std::ceil(lo);
            long long b = mode == FILL_INDEX ? (long long)std::ceil(hi) - 1 : (long long)std::floor(hi);
            if (std::is_unsigned_v<T> && a < 0) a = 0;
            if (b < a) b = a;
            unsigned long long span = (unsigned long long)(b - a) + 1ULL;
            x = T(a + (long long)(rng->next() % span));
        }
    }
};

struct Flattener {
    std::vector<double>* out; std::vector<char>* is_int;
    template <class T> void operator()(T& x) {
        out->push_back((double)x);
        if (is_int) is_int->push_back(std::is_integral_v<T> ? 1 : 0);
    }
};

struct DrawCounter {
    size_t n = 0;
    template <class T> void operator()(T&) { ++n; }
};
// the random draws one element of T takes (one per scalar component: the same for every element)
template <class T, class V> size_t draws_per_element() {
    T e{};
    DrawCounter c;
    V{}(e, c);
    return c.n;
}


// ---- errors ---------------------------------------------------------------------------------
struct Failure {
    std::string verdict;       // runtime-failed | wrong-output
    std::string message;
    bool input_error = false;  // the MEP is wrong, not the variant
};

// ---- checks ---------------------------------------------------------------------------------
struct Check {
    std::string name, role;
    bool ok = true;
    double max_abs = 0.0, max_rel = 0.0;
    long long unwritten = 0, first_bad = -1;
    std::string message;
    double rtol = 0.0, atol = 0.0;  // what the buffer was held to (an input is held unchanged: no tolerance)
    void fail(const std::string& m, long long at) {
        if (ok) { message = m; first_bad = at; }
        ok = false;
    }
    std::string json() const {
        return "{\"name\":" + jstr(name) + ",\"role\":" + jstr(role) + ",\"ok\":" + (ok ? "true" : "false") +
               ",\"max_abs_err\":" + jnum(max_abs) + ",\"max_rel_err\":" + jnum(max_rel) +
               ",\"unwritten\":" + std::to_string(unwritten) + ",\"first_bad\":" + std::to_string(first_bad) +
               ",\"rtol\":" + (role == "in" ? std::string("null") : jnum(rtol)) +
               ",\"atol\":" + (role == "in" ? std::string("null") : jnum(atol)) +
               ",\"message\":" + jstr(message) + "}";
    }
};

inline bool all_bytes(const unsigned char* p, size_t n, unsigned char v) {
    if (n == 4) { uint32_t x; memcpy(&x, p, 4); return x == 0x01010101u * v; }  // the common element sizes in one load
    if (n == 8) { uint64_t x; memcpy(&x, p, 8); return x == 0x0101010101010101ULL * v; }
    for (size_t i = 0; i < n; ++i) if (p[i] != v) return false;
    return true;
}

// Two runs of a kernel on one input set, its outputs filled with POISON before the first and POISON2 before
// the second: an element is unwritten exactly when it kept both fills (a written -1 is all-0xFF too, but
// not all-0x00). fill1: what the first run found instead of POISON (stale outputs), or nullptr.
inline constexpr unsigned char POISON = 0xFF, POISON2 = 0x00;
inline std::vector<unsigned char> written_mask(const unsigned char* first, const unsigned char* second, size_t count, size_t esz,
                                               const unsigned char* fill1 = nullptr) {
    std::vector<unsigned char> w(count);
    parallel_chunks(count, [&](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; ++i) {
            const bool kept1 = fill1 ? memcmp(first + i * esz, fill1 + i * esz, esz) == 0 : all_bytes(first + i * esz, esz, POISON);
            w[i] = !(kept1 && all_bytes(second + i * esz, esz, POISON2));
        }
    });
    return w;
}

// Whether some element kept POISON in all its bytes: only then does the second run (over POISON2) tell a written
// all-0xFF value from an element left alone; otherwise every element was written and one run of the kernel says so.
inline bool any_kept_poison(const unsigned char* first, size_t count, size_t esz) {
    std::atomic<bool> kept{false};
    parallel_chunks(count, [&](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi && !kept.load(std::memory_order_relaxed); ++i)
            if (all_bytes(first + i * esz, esz, POISON)) kept.store(true, std::memory_order_relaxed);
    });
    return kept.load();
}

// What the variant's first run finds in a stale set: the reference's previous results, except where those are all
// POISON2 bytes (a 0.0, a 0). There the first fill would equal the second run's and a written zero could not be told
// from an element left alone (an exclusive scan's first column, an empty CSR row), so POISON goes there.
inline std::vector<unsigned char> stale_fill(const std::vector<unsigned char>& prev, size_t esz) {
    std::vector<unsigned char> f(prev);
    parallel_chunks(f.size() / esz, [&](size_t lo, size_t hi) {
        for (size_t i = lo * esz; i < hi * esz; i += esz)
            if (all_bytes(f.data() + i, esz, POISON2)) memset(f.data() + i, POISON, esz);
    });
    return f;
}

// Compare one output buffer of the variant with the reference's (host copies, `count` elements of T), on the
// elements the reference wrote (`written`, nullptr: all). With `var_written`, an element the reference wrote
// and the variant did not fails, and so does one the variant wrote and the reference did not.
inline void note_unwritten(Check& c, const std::string& where, long long unwritten, long long first_unwritten) {
    c.unwritten = std::max(c.unwritten, unwritten);  // the worst input set
    if (unwritten)
        c.fail(where + std::to_string(unwritten) + " element(s) the reference writes were left unwritten (first at index " +
               std::to_string(first_unwritten) + ")", first_unwritten);
}

// the first byte at which two host buffers differ (n: none), a memcmp per chunk on the host's cores
inline size_t first_mismatch(const unsigned char* a, const unsigned char* b, size_t n) {
    size_t first = n;
    for (size_t at : map_chunks<size_t>(n, [&](size_t lo, size_t hi) {
             if (memcmp(a + lo, b + lo, hi - lo) == 0) return n;
             size_t k = lo;
             while (a[k] == b[k]) ++k;
             return k;
         }))
        first = std::min(first, at);
    return first;
}

// one chunk's findings of compare_buffer (merged in index order: counts add up, the firsts are the first chunk's)
struct CmpPart {
    long long extra = 0, first_extra = -1, unwritten = 0, first_unwritten = -1, nbad = 0, first_bad = -1, nnan = 0, first_nan = -1;
    size_t written = 0;
    double maxref = 0.0, max_abs = 0.0, max_rel = 0.0, bad_r = 0.0, bad_v = 0.0, ref0 = 0.0, var0 = 0.0;
    bool ref_const = true, var_const = true, var_zero = true, first = true;
};
inline void first_of(long long& n, long long& first, long long pn, long long pfirst) {
    if (pn && !n) first = pfirst;
    n += pn;
}
inline bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

template <class T, class V>
void compare_buffer(Check& c, const std::string& where, const unsigned char* ref, const unsigned char* var, size_t count,
                    const unsigned char* written_in, const unsigned char* var_written, double rtol, double atol) {
    const size_t esz = sizeof(T);
    std::vector<unsigned char> all;
    if (!written_in) all.assign(count, 1);
    const unsigned char* wr = written_in ? written_in : all.data();
    // elements the variant wrote and the reference did not; elements the reference wrote and the variant did not
    CmpPart m;
    for (const CmpPart& p : map_chunks<CmpPart>(count, [&](size_t lo, size_t hi) {
             CmpPart q;
             if (var_written)
                 for (size_t i = lo; i < hi; ++i) {
                     if (var_written[i] && !wr[i] && q.extra++ == 0) q.first_extra = (long long)i;
                     if (wr[i] && !var_written[i] && q.unwritten++ == 0) q.first_unwritten = (long long)i;
                 }
             return q;
         })) {
        first_of(m.extra, m.first_extra, p.extra, p.first_extra);
        first_of(m.unwritten, m.first_unwritten, p.unwritten, p.first_unwritten);
    }
    if (m.extra)
        c.fail(where + "the variant wrote " + std::to_string(m.extra) + " element(s) the reference leaves untouched (first at index " +
               std::to_string(m.first_extra) + ")", m.first_extra);
    if (memcmp(ref, var, count * esz) == 0) {  // the same bytes (an exact variant): only unwritten elements can fail it
        note_unwritten(c, where, m.unwritten, m.first_unwritten);
        return;
    }
    // the reference's largest finite magnitude (atol is relative to it)
    for (const CmpPart& p : map_chunks<CmpPart>(count, [&](size_t lo, size_t hi) {
             CmpPart q;
             V visit;
             std::vector<double> r1;
             std::vector<char> isint;
             r1.reserve(16);
             for (size_t i = lo; i < hi; ++i) {
                 if (!wr[i]) continue;
                 ++q.written;
                 T e; memcpy((void*)&e, ref + i * esz, esz);
                 if constexpr (std::is_arithmetic_v<T>) {  // one component: no flattening
                     if (!std::is_integral_v<T> && std::isfinite((double)e)) q.maxref = std::max(q.maxref, std::fabs((double)e));
                     continue;
                 }
                 r1.clear(); isint.clear();
                 Flattener fl{&r1, &isint};
                 visit(e, fl);
                 for (size_t k = 0; k < r1.size(); ++k)  // atol is relative to the largest floating-point value
                     if (!isint[k] && std::isfinite(r1[k])) q.maxref = std::max(q.maxref, std::fabs(r1[k]));
             }
             return q;
         })) {
        m.written += p.written;
        m.maxref = std::max(m.maxref, p.maxref);
    }
    if (m.written == 0) return;  // the reference wrote nothing here: nothing to hold the variant to
    const double abs_tol = atol * m.maxref;
    CmpPart t;  // the merged second pass
    for (const CmpPart& p : map_chunks<CmpPart>(count, [&](size_t lo, size_t hi) {
             CmpPart q;
             V visit;
             std::vector<double> r1, v1;
             std::vector<char> isint;
             r1.reserve(16); v1.reserve(16);
             // one scalar component of element i: the reference's r, the variant's v
             auto component = [&](size_t i, double r, double v, bool is_int) {
                 if (q.first) { q.ref0 = r; q.var0 = v; q.first = false; }
                 if (!same_value(r, q.ref0)) q.ref_const = false;
                 if (!same_value(v, q.var0)) q.var_const = false;
                 if (v != 0.0) q.var_zero = false;
                 bool bad = false;
                 if (is_int) {
                     bad = r != v;
                     if (bad) q.max_abs = std::max(q.max_abs, std::fabs(v - r));
                 } else if (!std::isfinite(r)) {
                     bad = !(std::isnan(r) ? std::isnan(v) : r == v);
                 } else if (!std::isfinite(v)) {
                     if (q.nnan++ == 0) q.first_nan = (long long)i;
                     bad = true;
                 } else {
                     const double err = std::fabs(v - r);
                     const double rel = err / std::max({std::fabs(r), abs_tol, 1e-300});
                     q.max_abs = std::max(q.max_abs, err);
                     q.max_rel = std::max(q.max_rel, rel);
                     bad = err > rtol * std::fabs(r) + abs_tol;
                 }
                 if (bad && q.nbad++ == 0) { q.first_bad = (long long)i; q.bad_r = r; q.bad_v = v; }
             };
             for (size_t i = lo; i < hi; ++i) {
                 if (!wr[i] || (var_written && !var_written[i])) continue;  // unwritten: counted above
                 T re, ve;
                 memcpy((void*)&re, ref + i * esz, esz); memcpy((void*)&ve, var + i * esz, esz);
                 if constexpr (std::is_arithmetic_v<T>) {  // one component: no flattening
                     component(i, (double)re, (double)ve, std::is_integral_v<T>);
                     continue;
                 }
                 r1.clear(); v1.clear(); isint.clear();
                 Flattener fr{&r1, &isint}, fv{&v1, nullptr};
                 visit(re, fr); visit(ve, fv);
                 for (size_t k = 0; k < r1.size(); ++k) component(i, r1[k], v1[k], isint[k] != 0);
             }
             return q;
         })) {
        if (p.nbad && !t.nbad) { t.bad_r = p.bad_r; t.bad_v = p.bad_v; }
        first_of(t.nbad, t.first_bad, p.nbad, p.first_bad);
        first_of(t.nnan, t.first_nan, p.nnan, p.first_nan);
        t.max_abs = std::max(t.max_abs, p.max_abs);
        t.max_rel = std::max(t.max_rel, p.max_rel);
        if (p.first) continue;  // a chunk with nothing compared
        if (t.first) { t.ref0 = p.ref0; t.var0 = p.var0; t.first = false; }
        t.ref_const = t.ref_const && p.ref_const && same_value(p.ref0, t.ref0);
        t.var_const = t.var_const && p.var_const && same_value(p.var0, t.var0);
        t.var_zero = t.var_zero && p.var_zero;
    }
    c.max_abs = std::max(c.max_abs, t.max_abs);
    c.max_rel = std::max(c.max_rel, t.max_rel);
    note_unwritten(c, where, m.unwritten, m.first_unwritten);
    if (t.nnan) {
        c.fail(where + "NaN/Inf in " + std::to_string(t.nnan) + " element(s) where the reference is finite (first at index " +
               std::to_string(t.first_nan) + ")", t.first_nan);
    }
    if (!t.first && t.var_const && !t.ref_const) {
        c.fail(where + (t.var_zero ? std::string("output is all zero") : "output is constant (" + fmt(t.var0) + ")") +
               " where the reference's is not", 0);
    }
    if (t.nbad) {
        c.fail(where + std::to_string(t.nbad) + " value(s) differ beyond tolerance (first at index " + std::to_string(t.first_bad) +
               ": reference " + fmt(t.bad_r) + ", variant " + fmt(t.bad_v) + "; max abs err " + fmt(c.max_abs) +
               ", max rel err " + fmt(c.max_rel) + ")", t.first_bad);
    }
}

// ---- guards around every buffer -------------------------------------------------------------
inline constexpr size_t GUARD = 256;
inline constexpr unsigned char GUARD_BYTE = 0xA5;

// ---- statistics -----------------------------------------------------------------------------
// how many pairs: the same rule as the OpenCL runner's (opencl_runner.py, timed_pairs)
inline constexpr char REF_MAGIC[8] = {'S', '2', 'S', 'R', 'E', 'F', '1', '\n'};  // --ref-cache files
inline constexpr int MIN_TIMED_PAIRS = 3;  // the fewest timed pairs of a timing, however long the kernel
// one more warm-up pair: always a first one (it also estimates the pair's time); then while the warm-ups so far and one
// more pair (as long as the last) stay within a quarter of target_s (0: no limit)
inline bool warm_more(const std::vector<double>& wr, const std::vector<double>& wv, double target_s) {
    if (wr.empty() || target_s <= 0) return true;
    double spent = 0;
    for (size_t i = 0; i < wr.size(); ++i) spent += wr[i] + wv[i];
    return spent + wr.back() + wv.back() <= target_s * 1e6 / 4;
}
// timed pairs for a pair of pair_us µs of device time: as many as fit target_s, at least MIN_TIMED_PAIRS, at most
// max_reps (timing.repetitions); target_s 0: max_reps
inline int timed_pairs(double pair_us, int max_reps, double target_s) {
    if (target_s <= 0 || pair_us <= 0) return max_reps;
    const double fit = target_s * 1e6 / pair_us;
    return std::min(max_reps, std::max(MIN_TIMED_PAIRS, fit >= (double)max_reps ? max_reps : (int)fit));
}
struct Stats {
    double median = 0, p25 = 0, p75 = 0, p10 = 0, p90 = 0, min = 0;
    int samples = 0, batch = 1, warmup = 0;
};
inline double quantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    if (v.empty()) return 0.0;
    double pos = q * (double)(v.size() - 1);
    size_t i = (size_t)pos;
    double frac = pos - (double)i;
    return i + 1 < v.size() ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
}
inline Stats stats(const std::vector<double>& us, int batch, int warmup) {
    Stats s;
    if (us.empty()) return s;
    s.median = quantile(us, 0.5); s.p25 = quantile(us, 0.25); s.p75 = quantile(us, 0.75);
    s.p10 = quantile(us, 0.10); s.p90 = quantile(us, 0.90);
    s.min = *std::min_element(us.begin(), us.end());
    s.samples = (int)us.size(); s.batch = batch; s.warmup = warmup;
    return s;
}
inline std::string stats_json(const Stats& s) {
    return "{\"median_us\":" + jnum(s.median) + ",\"spread_us\":" + jnum(s.p75 - s.p25) + ",\"p10_us\":" + jnum(s.p10) +
           ",\"p90_us\":" + jnum(s.p90) + ",\"min_us\":" + jnum(s.min) + ",\"samples\":" + std::to_string(s.samples) +
           ",\"batch\":" + std::to_string(s.batch) + ",\"warmup\":" + std::to_string(s.warmup) + "}";
}

// ---- launch: convert each argument to the kernel's exact parameter type, then cudaLaunchKernel ----
struct DevPtr {  // a device buffer: converts to whatever pointer type the kernel declares
    void* p;
    template <class T> operator T*() const { return static_cast<T*>(p); }
};

template <class F> struct fn_traits;
template <class... P> struct fn_traits<void (*)(P...)> {
    static constexpr size_t arity = sizeof...(P);
    template <size_t I> using param = std::remove_cv_t<std::tuple_element_t<I, std::tuple<P...>>>;
};

template <class... P, class... A, size_t... I>
cudaError_t launch_impl(void (*k)(P...), dim3 grid, dim3 block, size_t shmem, cudaStream_t stream,
                        std::index_sequence<I...>, const A&... a) {
    std::tuple<std::remove_cv_t<P>...> conv{static_cast<std::remove_cv_t<P>>(a)...};
    void* args[sizeof...(P) > 0 ? sizeof...(P) : 1] = {(void*)&std::get<I>(conv)...};
    return cudaLaunchKernel((const void*)k, grid, block, args, shmem, stream);
}
template <class... P, class... A>
cudaError_t launch(void (*k)(P...), dim3 grid, dim3 block, size_t shmem, cudaStream_t stream, const A&... a) {
    static_assert(sizeof...(P) == sizeof...(A), "s2s: argument count differs from the kernel's parameter count");
    return launch_impl(k, grid, block, shmem, stream, std::index_sequence_for<P...>{}, a...);
}

inline std::string dims(dim3 d) {
    return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

// ---- command line ---------------------------------------------------------------------------
inline bool parse_dim3(const char* s, dim3& d) {
    unsigned x = 1, y = 1, z = 1;
    int n = sscanf(s, "%u,%u,%u", &x, &y, &z);
    if (n < 1) return false;
    d = dim3(x, n >= 2 ? y : 1, n >= 3 ? z : 1);
    return true;
}
// {"grid": [x, y, z], "block": [x, y, z], "shared_mem": n} -- variants/<id>/variant.json
inline bool json_dim3(const std::string& text, const char* key, dim3& d) {
    size_t k = text.find(std::string("\"") + key + "\"");
    if (k == std::string::npos) return false;
    size_t b = text.find('[', k), e = text.find(']', k);
    if (b == std::string::npos || e == std::string::npos || e < b) return false;
    std::string inner = text.substr(b + 1, e - b - 1);
    for (char& ch : inner) if (ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r') ch = ' ';
    unsigned x = 1, y = 1, z = 1;
    int n = sscanf(inner.c_str(), " %u , %u , %u", &x, &y, &z);
    if (n < 1) return false;
    d = dim3(x, n >= 2 ? y : 1, n >= 3 ? z : 1);
    return true;
}
inline bool json_num(const std::string& text, const char* key, size_t& v) {
    size_t k = text.find(std::string("\"") + key + "\"");
    if (k == std::string::npos) return false;
    size_t c = text.find(':', k);
    if (c == std::string::npos) return false;
    unsigned long long x = 0;
    if (sscanf(text.c_str() + c + 1, " %llu", &x) != 1) return false;
    v = (size_t)x;
    return true;
}

inline void usage(const char* prog) {
    fprintf(stderr,
            "usage: %s [options]\n"
            "  --no-time            check only, no timing\n"
            "  --time-only          time without checking outputs\n"
            "  --no-post-check      skip the check with a fresh input set after timing\n"
            "  --no-probe           skip the bounds probe (the caller recorded its result for this reference)\n"
            "  --ref-cache DIR      read the reference's outputs of an input set from DIR where an earlier run wrote them,\n"
            "                       else write them there (with a fixed --seed; the set after timing stays fresh)\n"
            "  --input-sets N       input sets to check (seeds seed, seed+1, ...)\n"
            "  --seed N             first seed (default: $S2S_SEED, else fresh each run; the result names it)\n"
            "  --reps N             the most timed repetitions of each kernel\n"
            "  --warmup N           the most warm-up launches of each kernel\n"
            "  --target-s X         device seconds the timed repetitions aim at (fewer for a long kernel, at least 3; 0: --reps)\n"
            "  --rtol X --atol X    tolerances of every output (default: each output's from mep.toml)\n"
            "  --var-grid X,Y,Z     the variant's grid (blocks); default: the reference's\n"
            "  --var-block X,Y,Z    the variant's block\n"
            "  --var-shmem N        the variant's dynamic shared memory in bytes\n"
            "  --variant-json FILE  read grid/block/shared_mem from a variant.json\n"
            "Prints one line 'S2S_RESULT {json}' on stdout.\n", prog);
}

inline bool parse_args(int argc, char** argv, Options& o, std::string& err) {
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto need = [&](const char* what) -> const char* {
            if (i + 1 >= argc) { err = std::string("missing value after ") + what; return nullptr; }
            return argv[++i];
        };
        const char* v = nullptr;
        if (a == "--no-time") o.time = false;
        else if (a == "--time-only") o.check = false;
        else if (a == "--no-post-check") o.post_check = false;
        else if (a == "--no-probe") o.probe = false;
        else if (a == "--ref-cache") { if (!(v = need("--ref-cache"))) return false; o.ref_cache = v; }
        else if (a == "-h" || a == "--help") { usage(argv[0]); exit(0); }
        else if (a == "--input-sets") { if (!(v = need("--input-sets"))) return false; o.input_sets = atoi(v); }
        else if (a == "--seed") { if (!(v = need("--seed"))) return false; o.seed = strtoull(v, nullptr, 10); o.has_seed = true; }
        else if (a == "--reps") { if (!(v = need("--reps"))) return false; o.reps = atoi(v); }
        else if (a == "--warmup") { if (!(v = need("--warmup"))) return false; o.warmup = atoi(v); }
        else if (a == "--target-s") { if (!(v = need("--target-s"))) return false; o.target_s = atof(v); }
        else if (a == "--rtol") { if (!(v = need("--rtol"))) return false; o.rtol = atof(v); o.has_rtol = true; }
        else if (a == "--atol") { if (!(v = need("--atol"))) return false; o.atol = atof(v); o.has_atol = true; }
        else if (a == "--var-grid") { if (!(v = need("--var-grid")) || !parse_dim3(v, o.var_grid)) { err = "bad --var-grid"; return false; } o.has_grid = true; }
        else if (a == "--var-block") { if (!(v = need("--var-block")) || !parse_dim3(v, o.var_block)) { err = "bad --var-block"; return false; } o.has_block = true; }
        else if (a == "--var-shmem") { if (!(v = need("--var-shmem"))) return false; o.var_shmem = (size_t)strtoull(v, nullptr, 10); o.has_shmem = true; }
        else if (a == "--variant-json") {
            if (!(v = need("--variant-json"))) return false;
            FILE* f = fopen(v, "rb");
            if (!f) { err = std::string("cannot read ") + v; return false; }
            std::string text; char buf[4096]; size_t n;
            while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
            fclose(f);
            o.has_grid = json_dim3(text, "grid", o.var_grid) || o.has_grid;
            o.has_block = json_dim3(text, "block", o.var_block) || o.has_block;
            o.has_shmem = json_num(text, "shared_mem", o.var_shmem) || o.has_shmem;
        } else { err = "unknown option " + a; return false; }
    }
    if (o.input_sets < 0) o.input_sets = 0;  // 0: the captured sets only (run_harness: at least 1 where none was captured)
    if (o.reps < 1) o.reps = 1;
    if (o.warmup < 0) o.warmup = 0;
    if (!(o.target_s >= 0)) o.target_s = 0;
    return true;
}


// ---- what the generated part describes --------------------------------------------------------
using FillFn = void (*)(unsigned char*, size_t, unsigned long long, unsigned long long, int, double, double);
using CmpFn = void (*)(Check&, const std::string&, const unsigned char*, const unsigned char*, size_t, const unsigned char*,
                       const unsigned char*, double, double);
using LaunchFn = cudaError_t (*)(void* const* ptrs, unsigned long long seed, dim3, dim3, size_t, cudaStream_t);
using SymCopyFn = cudaError_t (*)(const void*, size_t);

// element i of every chunk gets exactly the value a single sequential stream gives it (splitmix64 is a counter)
template <class T, class V>
void fill_bytes(unsigned char* p, size_t n, unsigned long long seed, unsigned long long stream, int mode, double lo, double hi) {
    if (mode == FILL_ZEROS) { memset(p, 0, n * sizeof(T)); return; }
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        // row pointers: element i is i * step + u_i, u_i in [0, step] from its draw (0 at both ends), step =
        // floor(hi / (n - 1)): never falling, from 0 to at most hi, ranges from empty to twice the mean length
        if (mode == FILL_OFFSETS && n > 1) {
            const unsigned long long step = hi >= 1.0 ? (unsigned long long)hi / (unsigned long long)(n - 1) : 0ULL;
            parallel_chunks(n, [&](size_t a, size_t b) {
                Rng rng(seed, stream);
                rng.skip((unsigned long long)a);
                for (size_t i = a; i < b; ++i) {
                    unsigned long long u = rng.next() % (step + 1);
                    if (i == 0 || i + 1 == n) u = 0;
                    const T e = T(i * step + u);
                    memcpy(p + i * sizeof(T), (const void*)&e, sizeof(T));
                }
            });
            return;
        }
    }
    const size_t draws = draws_per_element<T, V>();
    parallel_chunks(n, [&](size_t a, size_t b) {
        Rng rng(seed, stream);
        rng.skip((unsigned long long)(a * draws));
        Filler f{&rng, lo, hi, mode};
        V visit;
        for (size_t i = a; i < b; ++i) {
            T e{};
            visit(e, f);
            memcpy(p + i * sizeof(T), (const void*)&e, sizeof(T));
        }
    });
}

// The run below (Run, run_harness) is the same for every variant: s2s compiles it once into an object
// (S2S_RUNTIME_OBJECT, s2s/mep/backends/harness_runtime.py) that each variant's build links (S2S_PREBUILT_RUNTIME),
// with the fills and checks of the element types most kernels use; built alone (nvcc harness.cu), it is all here.
#define S2S_COMMON_ELEMENTS(X) X(float) X(double) X(int) X(unsigned int) X(long long) X(unsigned long long) \
    X(long) X(unsigned long) X(char) X(unsigned char)
#if defined(S2S_PREBUILT_RUNTIME) || defined(S2S_RUNTIME_OBJECT)
#ifdef S2S_PREBUILT_RUNTIME
#define S2S_EXTERN extern
#else
#define S2S_EXTERN
#endif
#define S2S_ELEMENT(T) \
    S2S_EXTERN template void fill_bytes<T, VisitPrim>(unsigned char*, size_t, unsigned long long, unsigned long long, int, \
                                                     double, double); \
    S2S_EXTERN template void compare_buffer<T, VisitPrim>(Check&, const std::string&, const unsigned char*, \
                                                         const unsigned char*, size_t, const unsigned char*, \
                                                         const unsigned char*, double, double);
S2S_COMMON_ELEMENTS(S2S_ELEMENT)
#undef S2S_ELEMENT
#undef S2S_EXTERN
#endif

// a struct passed by value: filled field by field from (seed, stream), converts to the struct type of
// either copy of the kernel (s2s_ref::Params or s2s_var::Params)
struct NoFields { template <class T> void operator()(T&) const {} };
// A struct passed by value: every field from the seed, then the fields mep.toml gives values for.
template <class V, class Set = NoFields> struct StructArg {
    unsigned long long seed, stream; double lo, hi; Set set{};
    template <class T> operator T() const {
        T v{};
        Rng rng(seed, stream);
        Filler f{&rng, lo, hi, FILL_UNIFORM};
        V{}(v, f);
        set(v);
        return v;
    }
};
template <class V, class Set> StructArg<V, Set> struct_arg(unsigned long long seed, unsigned long long stream, double lo, double hi, Set set) {
    return StructArg<V, Set>{seed, stream, lo, hi, set};
}

struct BufSpec {
    const char* name; const char* role; size_t count; size_t esz;
    int fill; double lo, hi; FillFn fill_fn; CmpFn cmp;
    double rtol, atol;  // this output's tolerances (mep.toml: its own, else [check]'s)
};
struct SymSpec {
    const char* name; size_t count, esz; FillFn fill_fn; SymCopyFn ref_copy, var_copy;
};
// ---- captured data of a real run (s2s capture): one .npy file per buffer, before and after ----------
struct CapturedSet {
    std::string label;
    std::vector<std::string> before, after;  // per buffer (spec.bufs order), paths relative to the MEP
    std::vector<std::string> syms;           // per symbol; "" when the symbol was not captured
};
struct CapturedData {
    std::vector<std::vector<unsigned char>> before, after, syms;
};
// the raw data of a .npy file (any version; the shape and type are checked by size by the caller)
// read once into `out`, sized from the file, in parallel chunks: a captured 1 GiB matrix took seconds to read through
// a growing buffer, and a long kernel's MEP read six such files in each evaluation (23 s of its setup on the H200)
inline bool read_npy(const std::string& path, std::vector<unsigned char>& out, std::string& err) {
    const int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) { err = "cannot open " + path + " (run the harness in the MEP directory)"; return false; }
    struct stat st;
    unsigned char head[12];
    const bool headed = fstat(fd, &st) == 0 && pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head;
    if (!headed || memcmp(head, "\x93NUMPY", 6) != 0) { close(fd); err = path + ": not a .npy file"; return false; }
    size_t start = 10, hlen = (size_t)head[8] | ((size_t)head[9] << 8);
    if (head[6] >= 2) { start = 12; hlen |= ((size_t)head[10] << 16) | ((size_t)head[11] << 24); }
    const size_t total = (size_t)st.st_size;
    if (start + hlen > total) { close(fd); err = path + ": truncated .npy header"; return false; }
    const size_t n = total - start - hlen, at = start + hlen;
    out.resize(n);
    std::atomic<bool> short_read{false};
    parallel_chunks(n, [&](size_t lo, size_t hi) {
        while (lo < hi) {
            const ssize_t got = pread(fd, out.data() + lo, hi - lo, (off_t)(at + lo));
            if (got <= 0) { short_read = true; return; }
            lo += (size_t)got;
        }
    });
    close(fd);
    if (short_read) { err = "cannot read " + path; return false; }
    return true;
}

struct KernelSpec {
    const char* who; dim3 grid, block; size_t shmem; LaunchFn launch; const void* fn;
};
struct Spec {
    const char* backend; const char* kernel;
    const char* smaller = "";  // the size scalars halved ("n = 500"), "" when none: see g_smaller
    size_t probe_tail = 0;  // bytes the bounds probe watches after each buffer (opencl_types.probe_tail)
    std::vector<BufSpec> bufs;
    std::vector<SymSpec> syms;
    KernelSpec ref, var;
    Options defaults;
    std::vector<CapturedSet> captured;
};

// set while the smaller size's input set runs: the generated launch passes each size scalar's smaller value
inline bool g_smaller = false;
inline unsigned long long fresh_seed() {
    std::random_device rd;
    return ((unsigned long long)rd() << 1 ^ rd()) & 0x7FFFFFFFULL;
}
inline constexpr size_t PROBE_TAIL_MAX = (size_t)256 << 20;
inline constexpr unsigned char GUARD_BYTE2 = 0x5A;

// what the variant's translation unit and a prebuilt run must agree on (run_harness refuses a run built otherwise)
inline constexpr unsigned long long LAYOUT = ((((((sizeof(Options) * 131 + sizeof(BufSpec)) * 131 + sizeof(SymSpec)) * 131 +
                                         sizeof(KernelSpec)) * 131 + sizeof(Spec)) * 131 + sizeof(CapturedSet)) * 131 +
                                       sizeof(Check)) * 131 + sizeof(Failure);

#ifdef S2S_PREBUILT_RUNTIME
int run_harness(const Spec& spec, int argc, char** argv, unsigned long long layout = LAYOUT);
#else
// ---- the run ----------------------------------------------------------------------------------
inline constexpr size_t NO_DIFF = ~(size_t)0;

// the first byte at which two device buffers differ (atomicMin into *first, which starts at NO_DIFF)
__global__ void s2s_first_difference(const unsigned char* a, const unsigned char* b, size_t n, unsigned long long* first) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        if (a[i] != b[i]) {
            atomicMin(first, (unsigned long long)i);
            return;
        }
    }
}

// reads the L2 flush buffer right after the memset wrote it (prepare_timed): the memset leaves the L2 full of dirty
// lines, and a timed kernel that reads more than the L2 holds evicted them, their write-back (one L2 of bytes) sharing
// DRAM with the kernel: every 64 MB read-only zoo kernel measured 26-27 us against a copy floor of 15.9 us. Read after
// the memset, the lines are written back before the timed launch and the kernel finds a cold L2 of clean lines.
// `sink` is never written (the fill's words XOR to 0): the store only keeps the loads.
__global__ void s2s_l2_read(const uint4* p, size_t n, unsigned* sink) {
    unsigned s = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = p[i];
        s ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (s == 0x2545F491u) *sink = s;
}

// the first byte of a device region that is not `v` (atomicMin into *first, which starts at NO_DIFF): the bounds probe
// checks the regions past the buffers on the device instead of downloading them (up to PROBE_TAIL_MAX bytes each)
__global__ void s2s_first_other(const unsigned char* a, size_t n, unsigned char v, unsigned long long* first) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        if (a[i] != v) {
            atomicMin(first, (unsigned long long)i);
            return;
        }
    }
}

struct Buffer {
    const BufSpec* spec;
    unsigned char* base = nullptr;  // GUARD | data | GUARD
    unsigned char* data = nullptr;
    unsigned char* saved = nullptr; // device copy of the initial contents (inout), for timing
    // a device copy of `init` (inputs, in-out buffers) for the current input set: uploaded once per set, every reset
    // copies from it on the device, and an input is checked against it on the device instead of downloaded
    unsigned char* pristine = nullptr;
    bool pristine_tried = false, pristine_ok = false;
    bool dev_in = false;      // this set: the input is checked on the device (the reference left it as it was)
    bool ref1_equal = false;  // this set: the reference's first run left the input equal to `init`
    size_t var_diff[2] = {0, 0};  // the variant's runs: first byte that differs from `init` (NO_DIFF: none)
    size_t bytes = 0;
    std::vector<unsigned char> init, ref_after, var_after, prev_ref;  // prev_ref: the reference's output of the last set
    std::vector<unsigned char> ref_after2, var_after2;  // the second runs, over POISON2
    bool cached_dev_in = false;  // --ref-cache: the reference left this input as it was, checked on the device
    bool is(const char* r) const { return strcmp(spec->role, r) == 0; }
};

struct Run {
    const Spec& spec;
    Options o;
    std::vector<Buffer> bufs;
    std::vector<std::vector<unsigned char>> sym_host;
    std::vector<Check> checks;
    std::vector<std::string> messages;
    bool ref_once_said = false;  // the message that the reference ran once per input set is given once
    int ref_read_sets = 0, ref_written_sets = 0, reproduce_read = 0;  // --ref-cache: what was read and written
    double ref_check_us = -1;  // the shortest reference launch of the checks (host clock, launch to synchronized), -1: none
    const CapturedData* shuffle_source = nullptr;  // the first captured set, where there is one (FILL_SHUFFLE)
    std::vector<void*> ptrs;
    cudaStream_t stream = nullptr;
    std::string device = "?";
    unsigned char* flush = nullptr;
    size_t flush_bytes = 0;
    DeviceLock lock;  // $S2S_HARNESS_LOCK: checks shared with other evaluations, the timing alone
    unsigned long long* diff_slot = nullptr;  // s2s_first_difference's result
    std::set<const void*> pinned;  // host copies page-locked by pin()
    std::vector<unsigned char> guard_pattern = std::vector<unsigned char>(GUARD, GUARD_BYTE);
    // the bounds probe's outcome, for the caller's record (result's "probe"): "" not run, clean, fault or skipped
    std::string probe_state, probe_message;

    explicit Run(const Spec& s) : spec(s), o(s.defaults) {}

    static void api(cudaError_t e, const std::string& what, bool input_error = false) {
        if (e != cudaSuccess) {
            Failure f{"runtime-failed", what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")", input_error};
            throw f;
        }
    }

    void check_launch(const KernelSpec& k, const cudaDeviceProp& p, bool reference) {
        std::string who = reference ? "launch" : "the variant's launch";
        auto bad = [&](const std::string& entry, const std::string& m) {
            Failure f{"runtime-failed", (reference ? entry + ": " : who + ": ") + m, reference};
            throw f;
        };
        const dim3 g = k.grid, b = k.block;
        if (!g.x || !g.y || !g.z) bad("launch.grid", "grid " + dims(g) + " has a zero dimension");
        if (!b.x || !b.y || !b.z) bad("launch.block", "block " + dims(b) + " has a zero dimension");
        const unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
        if (threads > (unsigned long long)p.maxThreadsPerBlock)
            bad("launch.block", "block " + dims(b) + " has " + std::to_string(threads) + " threads; the device allows " +
                                    std::to_string(p.maxThreadsPerBlock));
        if (b.x > (unsigned)p.maxThreadsDim[0] || b.y > (unsigned)p.maxThreadsDim[1] || b.z > (unsigned)p.maxThreadsDim[2])
            bad("launch.block", "block " + dims(b) + " exceeds the device's limits (" + std::to_string(p.maxThreadsDim[0]) + ", " +
                                    std::to_string(p.maxThreadsDim[1]) + ", " + std::to_string(p.maxThreadsDim[2]) + ")");
        if (g.x > (unsigned)p.maxGridSize[0] || g.y > (unsigned)p.maxGridSize[1] || g.z > (unsigned)p.maxGridSize[2])
            bad("launch.grid", "grid " + dims(g) + " exceeds the device's limits (" + std::to_string(p.maxGridSize[0]) + ", " +
                                   std::to_string(p.maxGridSize[1]) + ", " + std::to_string(p.maxGridSize[2]) + ")");
        cudaFuncAttributes fa;
        api(cudaFuncGetAttributes(&fa, k.fn), std::string("cudaFuncGetAttributes(") + k.who + ")", reference);
        if (threads > (unsigned long long)fa.maxThreadsPerBlock)
            bad("launch.block", "block " + dims(b) + " has " + std::to_string(threads) + " threads; the " + k.who +
                                    " kernel allows at most " + std::to_string(fa.maxThreadsPerBlock) +
                                    " (launch bounds or register use)");
        const size_t optin = (size_t)p.sharedMemPerBlockOptin;
        if (k.shmem + fa.sharedSizeBytes > std::max(optin, (size_t)p.sharedMemPerBlock))
            bad("launch.shared_mem", std::to_string(k.shmem) + " bytes of dynamic shared memory (+" + std::to_string(fa.sharedSizeBytes) +
                                         " static) exceed the device's " + std::to_string(std::max(optin, (size_t)p.sharedMemPerBlock)));
        if (k.shmem > 48 * 1024)
            api(cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)k.shmem),
                std::string("cudaFuncSetAttribute(") + k.who + ", MaxDynamicSharedMemorySize)", reference);
    }

    void setup() {
        int ndev = 0;
        api(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
        if (ndev < 1) { Failure f{"runtime-failed", "no GPU found", false}; throw f; }
        api(cudaSetDevice(0), "cudaSetDevice(0)");
        cudaDeviceProp p;
        api(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
        device = std::string(p.name) + " (cc " + std::to_string(p.major) + "." + std::to_string(p.minor) + ")";
        check_launch(spec.ref, p, true);
        check_launch(spec.var, p, false);
        api(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

        size_t need = 0;
        const BufSpec* largest = nullptr;
        for (const BufSpec& b : spec.bufs) {
            need += b.count * b.esz + 2 * GUARD;
            if (!largest || b.count * b.esz > largest->count * largest->esz) largest = &b;
        }
        size_t free_b = 0, total_b = 0;
        api(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
        if (largest && need > free_b) {
            Failure f{"runtime-failed", std::string("params.") + largest->name + ".count: the buffers need " +
                                            std::to_string(need >> 20) + " MiB, the device has " + std::to_string(free_b >> 20) +
                                            " MiB free", true};
            throw f;
        }
        ptrs.assign(spec.bufs.size(), nullptr);
        bufs.resize(spec.bufs.size());
        for (size_t i = 0; i < spec.bufs.size(); ++i) {
            Buffer& b = bufs[i];
            b.spec = &spec.bufs[i];
            b.bytes = b.spec->count * b.spec->esz;
            if (!b.bytes) continue;  // a scalar: no buffer
            api(cudaMalloc((void**)&b.base, b.bytes + 2 * GUARD), std::string("cudaMalloc(params.") + b.spec->name + ")", true);
            b.data = b.base + GUARD;
            ptrs[i] = b.data;
            api(cudaMemset(b.base, 0, b.bytes + 2 * GUARD), "cudaMemset");
            arm_guards(b);
            if (!b.is("out")) b.init.resize(b.bytes);
            checks.push_back(Check{b.spec->name, b.spec->role});
            checks.back().rtol = rtol_of(b);
            checks.back().atol = atol_of(b);
        }
        sym_host.resize(spec.syms.size());
        for (size_t j = 0; j < spec.syms.size(); ++j) sym_host[j].resize(spec.syms[j].count * spec.syms[j].esz);
    }

    // --rtol/--atol on the command line hold every output to them
    double rtol_of(const Buffer& b) const { return o.has_rtol ? o.rtol : b.spec->rtol; }
    double atol_of(const Buffer& b) const { return o.has_atol ? o.atol : b.spec->atol; }

    Check& check_of(const Buffer& b) {
        for (Check& c : checks) if (c.name == b.spec->name) return c;
        return checks.front();
    }

    void arm_guards(Buffer& b) {
        api(cudaMemcpy(b.base, guard_pattern.data(), GUARD, cudaMemcpyHostToDevice), "cudaMemcpy(guard)");
        api(cudaMemcpy(b.data + b.bytes, guard_pattern.data(), GUARD, cudaMemcpyHostToDevice), "cudaMemcpy(guard)");
    }

    // bytes written outside the buffer by the last launch, re-armed afterwards
    std::string guard_violation(Buffer& b) {
        std::vector<unsigned char> lo(GUARD), hi(GUARD);
        api(cudaMemcpy(lo.data(), b.base, GUARD, cudaMemcpyDeviceToHost), "cudaMemcpy(guard)");
        api(cudaMemcpy(hi.data(), b.data + b.bytes, GUARD, cudaMemcpyDeviceToHost), "cudaMemcpy(guard)");
        size_t nlo = 0, nhi = 0;
        for (size_t k = 0; k < GUARD; ++k) { nlo += lo[k] != GUARD_BYTE; nhi += hi[k] != GUARD_BYTE; }
        if (!nlo && !nhi) return "";
        arm_guards(b);
        std::string m;
        if (nhi) m += "wrote " + std::to_string(nhi) + " byte(s) past the end of the buffer (" + std::to_string(b.spec->count) + " elements)";
        if (nlo) m += std::string(m.empty() ? "" : "; ") + "wrote " + std::to_string(nlo) + " byte(s) before its start";
        return m;
    }

    // Fisher-Yates over the elements, from the seed alone: buffers of one length get one permutation
    static void shuffle_elements(unsigned char* p, size_t n, size_t esz, unsigned long long seed) {
        Rng rng(seed, 0x5EEDULL);
        std::vector<unsigned char> tmp(esz);
        for (size_t i = n; i > 1; --i) {
            const size_t j = (size_t)(rng.next() % (unsigned long long)i);
            if (j == i - 1) continue;
            memcpy(tmp.data(), p + (i - 1) * esz, esz);
            memcpy(p + (i - 1) * esz, p + j * esz, esz);
            memcpy(p + j * esz, tmp.data(), esz);
        }
    }

    void fill_set(unsigned long long seed, const CapturedData* cd = nullptr) {
        lock.host("inputs");
        for (size_t i = 0; i < bufs.size(); ++i) {
            Buffer& b = bufs[i];
            if (!b.bytes || b.is("out")) continue;
            b.pristine_ok = false;
            if (cd) { b.init = cd->before[i]; continue; }
            if (b.spec->fill == FILL_SHUFFLE && shuffle_source && shuffle_source->before[i].size() == b.bytes) {
                b.init = shuffle_source->before[i];
                shuffle_elements(b.init.data(), b.spec->count, b.spec->esz, seed);
                continue;
            }
            b.spec->fill_fn(b.init.data(), b.spec->count, seed, i, b.spec->fill, b.spec->lo, b.spec->hi);
        }
        for (size_t j = 0; j < spec.syms.size(); ++j) {
            const SymSpec& s = spec.syms[j];
            if (cd && !cd->syms[j].empty()) sym_host[j] = cd->syms[j];
            else s.fill_fn(sym_host[j].data(), s.count, seed, 500 + j, FILL_UNIFORM, -1.0, 1.0);
            api(s.ref_copy(sym_host[j].data(), sym_host[j].size()), std::string("cudaMemcpyToSymbol(symbols.") + s.name + ")", true);
            api(s.var_copy(sym_host[j].data(), sym_host[j].size()), std::string("cudaMemcpyToSymbol(variant symbol ") + s.name + ")");
        }
    }

    // inputs and in-out buffers to their initial contents, outputs to the poison value
    void reset(unsigned char poison = POISON) {
        for (Buffer& b : bufs) {
            if (!b.bytes) continue;
            if (b.is("out")) api(cudaMemset(b.data, poison, b.bytes), "cudaMemset(poison)");
            else if (keep_pristine(b)) api(cudaMemcpy(b.data, b.pristine, b.bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy(inputs)");
            else api(cudaMemcpy(b.data, b.init.data(), b.bytes, cudaMemcpyHostToDevice), "cudaMemcpy(inputs)");
        }
    }

    // `init` on the device for this set (one upload per set, not one per launch), where the device has room for a
    // copy; false: the caller uploads from the host as before
    bool keep_pristine(Buffer& b) {
        if (!b.pristine && !b.pristine_tried) {
            b.pristine_tried = true;
            size_t free_b = 0, total_b = 0;
            if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess || b.bytes > free_b / 4 ||
                cudaMalloc((void**)&b.pristine, b.bytes) != cudaSuccess) {
                b.pristine = nullptr;
                cudaGetLastError();
            }
        }
        if (!b.pristine) return false;
        if (!b.pristine_ok) {
            pin(b.init);
            api(cudaMemcpy(b.pristine, b.init.data(), b.bytes, cudaMemcpyHostToDevice), "cudaMemcpy(inputs)");
            b.pristine_ok = true;
        }
        return true;
    }

    // the first byte where the buffer differs from its initial contents, compared on the device (NO_DIFF: none)
    size_t first_difference(const Buffer& b) {
        arm_diff_slot();
        s2s_first_difference<<<1024, 256>>>(b.data, b.pristine, b.bytes, diff_slot);
        api(cudaGetLastError(), "s2s_first_difference");
        return read_diff_slot();
    }

    // the first byte of [p, p + n) on the device that is not `v` (NO_DIFF: none)
    size_t first_other(const unsigned char* p, size_t n, unsigned char v) {
        arm_diff_slot();
        s2s_first_other<<<1024, 256>>>(p, n, v, diff_slot);
        api(cudaGetLastError(), "s2s_first_other");
        return read_diff_slot();
    }

    void arm_diff_slot() {
        if (!diff_slot) api(cudaMalloc((void**)&diff_slot, sizeof *diff_slot), "cudaMalloc(comparison)");
        const unsigned long long none = NO_DIFF;
        api(cudaMemcpy(diff_slot, &none, sizeof none, cudaMemcpyHostToDevice), "cudaMemcpy(comparison)");
    }

    size_t read_diff_slot() {
        unsigned long long first = NO_DIFF;
        api(cudaMemcpy(&first, diff_slot, sizeof first, cudaMemcpyDeviceToHost), "cudaMemcpy(comparison)");
        return (size_t)first;
    }

    void launch_once(const KernelSpec& k, unsigned long long seed, bool reference, const std::string& when) {
        phase(std::string(k.who) + " kernel, " + when);
        // the copies and memsets before it ran on the legacy default stream, which does not order work on a
        // non-blocking stream (and a memset or a copy from pageable memory may still be in flight): wait for them
        api(cudaDeviceSynchronize(), "cudaDeviceSynchronize(before the launch)");
        const auto t0 = std::chrono::steady_clock::now();
        cudaError_t e = k.launch(ptrs.data(), seed, k.grid, k.block, k.shmem, stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
        if (e == cudaSuccess && reference && !g_smaller) {  // the shortest of the checks' reference launches, for the caller
            const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
            if (ref_check_us < 0 || us < ref_check_us) ref_check_us = us;
        }
        if (e == cudaSuccess) e = cudaGetLastError();
        if (e != cudaSuccess) {
            Failure f{"runtime-failed",
                      std::string(reference ? "the reference kernel failed (" : "the variant kernel failed (") + when + "): " +
                          cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")" +
                          (reference ? "; check the counts and the launch in mep.toml" : ""),
                      reference};
            throw f;
        }
    }

    void download(std::vector<unsigned char>& dst, const Buffer& b) {
        dst.resize(b.bytes);
        api(cudaMemcpy(dst.data(), b.data, b.bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(outputs)");
    }

    // a buffer's own host copy (sized once, never reallocated: it lives as long as the run), page-locked the first
    // time, so that every later copy is a DMA that needs no CPU while the device is held (a pageable copy goes through
    // a staging buffer, slow on a loaded host); where it cannot be locked, the copy stays pageable
    void pin(std::vector<unsigned char>& v) {
        if (v.empty() || pinned.count(v.data())) return;
        pinned.insert(v.data());
        if (cudaHostRegister(v.data(), v.size(), cudaHostRegisterDefault) != cudaSuccess) cudaGetLastError();
    }

    void download_own(std::vector<unsigned char>& dst, const Buffer& b) {
        dst.resize(b.bytes);
        pin(dst);
        download(dst, b);
    }

    // ---- captured data (s2s capture) ----
    // with_after false: the outputs the application left are not read (a time-only run; a check whose reproduction and
    // reference outputs an earlier run recorded, --ref-cache)
    CapturedData load_captured(const CapturedSet& cs, bool with_after = true) {
        CapturedData d;
        d.before.resize(bufs.size());
        d.after.resize(bufs.size());
        d.syms.resize(spec.syms.size());
        for (size_t i = 0; i < bufs.size(); ++i) {
            const Buffer& b = bufs[i];
            if (!b.bytes) continue;
            for (int k = 0; k < (with_after ? 2 : 1); ++k) {
                const std::string& path = k ? cs.after.at(i) : cs.before.at(i);
                std::vector<unsigned char>& dst = k ? d.after[i] : d.before[i];
                std::string err;
                if (!read_npy(path, dst, err)) throw Failure{"runtime-failed", std::string("params.") + b.spec->name + ": " + err, true};
                if (dst.size() != b.bytes)
                    throw Failure{"runtime-failed", std::string("params.") + b.spec->name + ".count = " + std::to_string(b.spec->count) +
                                                        ", but the captured buffer " + path + " holds " +
                                                        std::to_string(dst.size() / b.spec->esz) + " elements", true};
            }
        }
        for (size_t j = 0; j < spec.syms.size() && j < cs.syms.size(); ++j) {
            if (cs.syms[j].empty()) continue;
            std::string err;
            if (!read_npy(cs.syms[j], d.syms[j], err)) throw Failure{"runtime-failed", std::string("symbols.") + spec.syms[j].name + ": " + err, true};
            if (d.syms[j].size() != sym_host[j].size())
                throw Failure{"runtime-failed", std::string("symbols.") + spec.syms[j].name + ".count: the captured " + cs.syms[j] +
                                                    " holds " + std::to_string(d.syms[j].size()) + " bytes, the MEP's symbol " +
                                                    std::to_string(sym_host[j].size()), true};
        }
        return d;
    }

    // the reference on the captured inputs must give the outputs the application produced (every
    // buffer as the real run left it); otherwise the MEP is not the application's kernel
    void reproduce(const CapturedData& cd, const std::string& label, const std::string& cache_key = "") {
        const std::string mark = o.ref_cache.empty() || cache_key.empty() ? "" : ref_cache_mark(cache_key);
        if (!mark.empty() && access(mark.c_str(), F_OK) == 0) { ++reproduce_read; return; }
        fill_set(o.seed, &cd);
        std::vector<std::vector<unsigned char>> got(bufs.size());
        {
            Held held(lock, false, "checks");
            for (size_t i = 0; i < bufs.size(); ++i) {
                Buffer& b = bufs[i];
                if (!b.bytes) continue;
                api(cudaMemcpy(b.data, cd.before[i].data(), b.bytes, cudaMemcpyHostToDevice), "cudaMemcpy(captured inputs)");
            }
            launch_once(spec.ref, o.seed, true, label);
            for (size_t i = 0; i < bufs.size(); ++i)
                if (bufs[i].bytes) download(got[i], bufs[i]);
        }  // the device is released: the comparisons run on the host
        std::string bad;
        for (size_t i = 0; i < bufs.size(); ++i) {
            Buffer& b = bufs[i];
            if (!b.bytes) continue;
            Check c{b.spec->name, b.spec->role};
            b.spec->cmp(c, "", cd.after[i].data(), got[i].data(), b.spec->count, nullptr, nullptr, rtol_of(b), atol_of(b));
            if (!c.ok) {
                std::string m = c.message;
                for (const char* w : {"reference ", "variant "}) {
                    size_t at = m.find(w);
                    if (at != std::string::npos) m.replace(at, strlen(w), w[0] == 'r' ? "application " : "MEP ");
                }
                bad += std::string(bad.empty() ? "" : "; ") + "params." + b.spec->name + ": " + m;
            }
        }
        if (!bad.empty())
            throw Failure{"runtime-failed", "capture: the reference kernel on the " + label +
                                                " does not reproduce the outputs the application produced: " + bad +
                                                "; the MEP does not reproduce the real run (check kernel_file, flags, the counts, "
                                                "the symbols and the launch in mep.toml) and must not be optimized", true};
        messages.push_back("the reference reproduces the application's outputs on the " + label);
        if (!mark.empty()) {
            FILE* f = fopen(mark.c_str(), "wb");
            if (f) fclose(f);
        }
    }

    // ---- the reference's outputs of an input set, kept across runs (--ref-cache DIR) ----
    // A long reference runs once per input set over all the evaluations of its MEP: the caller passes --ref-cache and
    // a fixed --seed once it has timed the reference (s2s/mep/reference_cache.py), and makes DIR specific to the
    // reference, mep.toml, the captured data and this harness. After a set's reference runs, DIR/<set>.bin holds its
    // outputs, its second run's (over POISON2: which elements it writes) and whether it left each input unchanged;
    // a later check of the same set (the captured set's number, or the seed and the size) reads them instead of
    // launching the reference. A file that does not match the buffers is ignored and the reference runs.
    std::string ref_cache_file(const std::string& key) const { return o.ref_cache + "/" + key + ".bin"; }
    std::string ref_cache_mark(const std::string& key) const { return o.ref_cache + "/" + key + ".reproduced"; }

    // an earlier run checked that the reference reproduces this captured set and kept its outputs on it
    bool recorded(const std::string& key) const {
        return !o.ref_cache.empty() && access(ref_cache_mark(key).c_str(), F_OK) == 0 &&
               access(ref_cache_file(key).c_str(), F_OK) == 0;
    }

    bool load_reference(const std::string& key, bool& ref_twice) {
        if (o.ref_cache.empty() || key.empty()) return false;
        FILE* f = fopen(ref_cache_file(key).c_str(), "rb");
        if (!f) return false;
        lock.host("reference outputs");
        bool ok = true;
        auto rd = [&](void* p, size_t n) { if (ok && n && fread(p, 1, n, f) != n) ok = false; };
        char magic[8] = {0};
        unsigned long long n = 0;
        unsigned char twice = 0;
        rd(magic, 8);
        rd(&n, 8);
        rd(&twice, 1);
        ok = ok && memcmp(magic, REF_MAGIC, 8) == 0 && n == bufs.size();
        for (size_t i = 0; ok && i < bufs.size(); ++i) {
            Buffer& b = bufs[i];
            unsigned long long bytes = 0;
            unsigned char flags = 0;
            rd(&bytes, 8);
            rd(&flags, 1);
            if (!ok || bytes != b.bytes) { ok = false; break; }
            b.ref1_equal = flags & 1;
            b.cached_dev_in = flags & 8;
            if (flags & 2) { b.ref_after.resize(b.bytes); rd(b.ref_after.data(), b.bytes); }
            if (flags & 4) { b.ref_after2.resize(b.bytes); rd(b.ref_after2.data(), b.bytes); }
        }
        fclose(f);
        if (ok) ref_twice = twice != 0;
        return ok;
    }

    void store_reference(const std::string& key, bool ref_twice) {
        if (o.ref_cache.empty() || key.empty()) return;
        lock.host("reference outputs");
        const std::string path = ref_cache_file(key), tmp = path + ".tmp" + std::to_string((long)getpid());
        FILE* f = fopen(tmp.c_str(), "wb");
        bool ok = f != nullptr;
        auto wr = [&](const void* p, size_t n) { if (ok && n && fwrite(p, 1, n, f) != n) ok = false; };
        const unsigned long long n = bufs.size();
        const unsigned char twice = ref_twice ? 1 : 0;
        wr(REF_MAGIC, 8);
        wr(&n, 8);
        wr(&twice, 1);
        for (const Buffer& b : bufs) {
            const bool after = b.bytes && !(b.is("in") && b.ref1_equal);
            const bool after2 = b.bytes && ref_twice && !(b.is("in") && b.dev_in);
            const unsigned long long bytes = b.bytes;
            const unsigned char flags = (b.ref1_equal ? 1 : 0) | (after ? 2 : 0) | (after2 ? 4 : 0) | (b.dev_in ? 8 : 0);
            wr(&bytes, 8);
            wr(&flags, 1);
            if (after) wr(b.ref_after.data(), b.bytes);
            if (after2) wr(b.ref_after2.data(), b.bytes);
        }
        if (f) ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
            remove(tmp.c_str());
            messages.push_back("--ref-cache: could not write " + path + "; the reference runs again next time");
            return;
        }
        ++ref_written_sets;
    }

    // the reference over outputs filled with `poison`; its results go to ref_after (POISON) or ref_after2
    void run_reference(unsigned long long seed, const std::string& label, unsigned char poison) {
        reset(poison);
        launch_once(spec.ref, seed, true, label);
        const bool first = poison == POISON;
        for (Buffer& b : bufs) {
            if (!b.bytes) continue;
            std::string g = guard_violation(b);
            if (!g.empty())
                throw Failure{"runtime-failed", std::string("params.") + b.spec->name + ".count = " + std::to_string(b.spec->count) +
                                                    ": the reference " + g + "; the count is smaller than what the kernel writes at the MEP's sizes", true};
            if (first) {
                b.dev_in = b.is("in") && b.pristine_ok;
                b.ref1_equal = false;
            }
            if (b.dev_in) {  // an input the reference leaves as it was is checked on the device, not downloaded
                const bool same = first_difference(b) == NO_DIFF;
                if (first) b.ref1_equal = same;
                if (same) continue;
                b.dev_in = false;
            }
            download_own(first ? b.ref_after : b.ref_after2, b);
        }
    }

    // an MEP whose reference writes nothing holds no variant to anything: bad input
    // (not fatal on generated inputs when the application's captured data exist: a kernel whose writes depend on its
    // data, such as a neighbour search, may write nothing on random inputs; the captured sets then decide)
    void refuse_empty_reference(const std::vector<std::vector<unsigned char>>& written, const std::string& label,
                                bool fatal = true) {
        std::string names;
        for (size_t i = 0; i < bufs.size(); ++i) {
            const Buffer& b = bufs[i];
            if (!b.bytes || b.is("in")) continue;
            names += std::string(names.empty() ? "" : ", ") + b.spec->name;
            if (b.is("out")) { for (unsigned char w : written[i]) if (w) return; }
            else if (b.ref_after != b.init) return;
        }
        if (!fatal) {
            messages.push_back(label + ": the reference writes nothing on these generated inputs; the application's "
                               "captured data decide");
            return;
        }
        throw Failure{"runtime-failed", "params: the reference writes nothing on " + label + " (outputs: " + (names.empty() ? "none" : names) +
                                            "); nothing could tell a variant from it (check the roles, the scalars and the launch in mep.toml)", true};
    }

    // an output (role out) is poisoned before every run: on the application's captured inputs the reference must then
    // write what the application's launch left there, else the kernel reads the output's prior contents (an in-place
    // update whose owner parameter was taken for an output; a launch that wrote the values its buffer already held,
    // checked as an output) and its role is inout. Bad input: the checks on poisoned memory would mean nothing.
    void outputs_ignore_prior_contents(const CapturedData& cd, const std::vector<std::vector<unsigned char>>& written,
                                       const std::string& label) {
        for (size_t i = 0; i < bufs.size(); ++i) {
            const Buffer& b = bufs[i];
            if (!b.bytes || !b.is("out") || written[i].size() != b.spec->count || cd.after[i].size() != b.bytes) continue;
            Check c{b.spec->name, b.spec->role};
            b.spec->cmp(c, "", cd.after[i].data(), b.ref_after.data(), b.spec->count, written[i].data(), nullptr,
                        rtol_of(b), atol_of(b));
            if (c.ok) continue;
            std::string m = c.message;
            for (const char* w : {"reference ", "variant "}) {
                size_t at = m.find(w);
                if (at != std::string::npos) m.replace(at, strlen(w), w[0] == 'r' ? "application " : "reference over poison ");
            }
            throw Failure{"runtime-failed", std::string("params.") + b.spec->name + ": role out, but on the " + label +
                                                " the reference writes other values when the buffer starts poisoned (" + m +
                                                "): the kernel reads its prior contents; its role is inout", true};
        }
    }

    // one input set: the reference twice (outputs poisoned with POISON, then POISON2: the elements it writes are
    // known exactly), then the variant twice on the same inputs; returns false when a check failed.
    // stale: the variant's first run finds the reference's results of the previous input set in its outputs (as
    // stale memory would) instead of the poison, so that a variant that keeps what it finds fails.
    // cache_key: the set's name in --ref-cache ("" for a set whose reference must run: the fresh set after timing);
    // feeds_stale: the next set runs with `stale`, so this one keeps its reference outputs as they would lie in stale
    // memory (prev_ref: a copy of a whole output and a pass over it, a second of host time per GiB, else skipped)
    bool check_set(unsigned long long seed, const std::string& label, bool stale = false, const CapturedData* cd = nullptr,
                   bool refuse_empty = true, const std::string& cache_key = "", bool feeds_stale = false) {
        fill_set(seed, cd);
        std::vector<std::vector<unsigned char>> written(bufs.size());
        std::vector<char> prefilled(bufs.size(), 0);
        bool any_prefilled = false;
        bool ref_twice = false;
        const bool cached = load_reference(cache_key, ref_twice);
        {
        Held held(lock, false, "checks");
        if (cached) {
            ++ref_read_sets;
            for (Buffer& b : bufs) b.dev_in = false;  // until the variant's first run has put the inputs on the device
        } else {
        run_reference(seed, label, POISON);
        // the reference's second run only where its first left an output element holding the poison: elsewhere every
        // element is known written and the first run's outputs are all the checks need (a long kernel runs once less)
        for (const Buffer& b : bufs)
            if (b.bytes && b.is("out") && any_kept_poison(b.ref_after.data(), b.spec->count, b.spec->esz)) ref_twice = true;
        if (ref_twice) run_reference(seed, label + ", outputs poisoned with zeros", POISON2);
        else if (!ref_once_said) {
            messages.push_back("the reference ran once per input set where its outputs held no poisoned element (each "
                               "element it writes is known from that run)");
            ref_once_said = true;
        }
        }
        for (int run_no = 1; run_no <= 2; ++run_no) {
            reset(run_no == 1 ? POISON : POISON2);
            if (cached && run_no == 1)  // an input the reference left unchanged is checked on the device where it can be
                for (Buffer& b : bufs) b.dev_in = b.bytes && b.cached_dev_in && b.is("in") && b.pristine_ok;
            if (run_no == 1 && stale) {
                for (size_t i = 0; i < bufs.size(); ++i) {
                    Buffer& b = bufs[i];
                    if (!b.bytes || !b.is("out") || b.prev_ref.size() != b.bytes) continue;
                    api(cudaMemcpy(b.data, b.prev_ref.data(), b.bytes, cudaMemcpyHostToDevice), "cudaMemcpy(stale outputs)");
                    prefilled[i] = 1;
                    any_prefilled = true;
                }
            }
            launch_once(spec.var, seed, false, run_no == 1 ? label : label + ", outputs poisoned with zeros");
            for (Buffer& b : bufs) {
                if (!b.bytes) continue;
                std::string g = guard_violation(b);
                if (!g.empty()) check_of(b).fail(label + ": " + g, (long long)b.spec->count);
                if (b.dev_in) b.var_diff[run_no - 1] = first_difference(b);
                else download_own(run_no == 1 ? b.var_after : b.var_after2, b);
            }
        }
        }  // the device is released: the comparisons run on the host
        if (!cached) store_reference(cache_key, ref_twice);
        for (size_t i = 0; i < bufs.size(); ++i) {
            Buffer& b = bufs[i];
            if (b.bytes && b.is("out"))
                written[i] = ref_twice ? written_mask(b.ref_after.data(), b.ref_after2.data(), b.spec->count, b.spec->esz)
                                       : std::vector<unsigned char>(b.spec->count, 1);
        }
        if (cd) outputs_ignore_prior_contents(*cd, written, label);
        if (refuse_empty) refuse_empty_reference(written, label, cd != nullptr || spec.captured.empty());
        bool all_ok = true;
        const std::string where = label + (any_prefilled ? " with outputs pre-filled with the previous set's results" : "") + ": ";
        const std::string where2 = label + ", second run: ";
        for (size_t i = 0; i < bufs.size(); ++i) {
            Buffer& b = bufs[i];
            if (!b.bytes) continue;
            Check& c = check_of(b);
            if (b.is("in")) {
                const std::vector<unsigned char>& ref = b.ref1_equal ? b.init : b.ref_after;
                for (int run_no = 0; run_no < 2; ++run_no) {
                    const std::vector<unsigned char>& after = run_no == 0 ? b.var_after : b.var_after2;
                    size_t k = 0;
                    if (b.dev_in) k = b.var_diff[run_no] == NO_DIFF ? b.bytes : b.var_diff[run_no];
                    else k = first_mismatch(ref.data(), after.data(), b.bytes);
                    if (k < b.bytes) {
                        c.fail(where + "the variant modified this input (first at element " + std::to_string(k / b.spec->esz) +
                                   "); the reference leaves it unchanged", (long long)(k / b.spec->esz));
                        break;
                    }
                }
            } else if (b.is("out")) {
                std::vector<unsigned char> vw = written_mask(b.var_after.data(), b.var_after2.data(), b.spec->count, b.spec->esz,
                                                             prefilled[i] ? b.prev_ref.data() : nullptr);
                b.spec->cmp(c, where, b.ref_after.data(), b.var_after.data(), b.spec->count, written[i].data(), vw.data(), rtol_of(b), atol_of(b));
                b.spec->cmp(c, where2, b.ref_after.data(), b.var_after2.data(), b.spec->count, written[i].data(), vw.data(), rtol_of(b), atol_of(b));
                if (feeds_stale) b.prev_ref = stale_fill(b.ref_after, b.spec->esz);
            } else {
                b.spec->cmp(c, where, b.ref_after.data(), b.var_after.data(), b.spec->count, nullptr, nullptr, rtol_of(b), atol_of(b));
                b.spec->cmp(c, where2, b.ref_after.data(), b.var_after2.data(), b.spec->count, nullptr, nullptr, rtol_of(b), atol_of(b));
            }
            if (!c.ok) all_ok = false;
        }
        return all_ok;
    }

    // one more input set with every size scalar halved (spec.smaller): a variant specialized to the MEP's one
    // size fails. Returns -1 when there is none or the reference cannot run that size, else 0/1.
    int check_smaller_size(unsigned long long seed) {
        if (!spec.smaller || !*spec.smaller) return -1;
        const std::string label = std::string("smaller size (") + spec.smaller + "; seed " + std::to_string(seed) + ")";
        g_smaller = true;
        try {
            const bool ok = check_set(seed, label, false, nullptr, false, "smaller-seed" + std::to_string(seed));
            g_smaller = false;
            return ok ? 1 : 0;
        } catch (const Failure& f) {
            g_smaller = false;
            if (!f.input_error) throw;
            messages.push_back("the " + label + " was not checked: the reference cannot run it (" + f.message + ")");
            return -1;
        }
    }

    // a count smaller than what the kernel reads: the reference on copies of the buffers, each followed by a
    // large region (spec.probe_tail, at least the largest buffer) holding GUARD_BYTE, then GUARD_BYTE2. A reference whose
    // results change reads past a buffer; one buffer at a time then names it. Bad input. The device is held for the
    // launches, the copies and the checks of the regions past the buffers (on the device); the outputs are compared on
    // the host after it is released. A property of the reference and mep.toml, not of the variant: the caller records
    // the outcome (probe_state) and passes --no-probe to later runs of the same reference (s2s/mep/probe_record.py).
    // on the application's first captured set where there is one: a kernel that indexes through its data (cell
    // starts, neighbour lists) reads anywhere on random inputs, so only the real data tell what it reads
    void probe_bounds(unsigned long long seed, const CapturedData* cd = nullptr) {
        size_t largest = 0, total = 0;
        for (Buffer& b : bufs) largest = std::max(largest, b.bytes);
        if (!largest) return;
        const size_t tail = std::max({GUARD, std::min(largest, PROBE_TAIL_MAX), std::min(spec.probe_tail, PROBE_TAIL_MAX)});
        for (Buffer& b : bufs) if (b.bytes) total += b.bytes + tail;
        size_t free_b = 0, total_b = 0;
        api(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
        if (total > free_b / 2) {
            probe_state = "skipped";
            probe_message = "bounds probe skipped: the buffers and their probe regions exceed the free device memory";
            messages.push_back(probe_message);
            return;
        }
        fill_set(seed, cd);
        std::vector<unsigned char*> probe(bufs.size(), nullptr);
        const std::vector<void*> saved = ptrs;
        auto release = [&]() {
            for (unsigned char*& p : probe) if (p) { cudaFree(p); p = nullptr; }
            ptrs = saved;
        };
        auto fault = [&](const std::string& m) {
            probe_state = "fault";
            probe_message = m;
            return Failure{"runtime-failed", m, true};
        };
        // one launch of the reference with `tails` past the buffers (device held by the caller): the outputs into
        // `out`, per buffer whether its region past the end still holds its tail byte into `kept`
        auto run = [&](const std::vector<unsigned char>& tails, std::vector<std::vector<unsigned char>>& out, std::vector<char>& kept) {
            for (size_t i = 0; i < bufs.size(); ++i) {
                Buffer& b = bufs[i];
                if (!b.bytes) continue;
                api(cudaMemset(probe[i] + b.bytes, tails[i], tail), "cudaMemset(bounds probe)");
                if (b.is("out")) api(cudaMemset(probe[i], POISON, b.bytes), "cudaMemset(bounds probe)");
                else api(cudaMemcpy(probe[i], b.init.data(), b.bytes, cudaMemcpyHostToDevice), "cudaMemcpy(bounds probe)");
            }
            launch_once(spec.ref, seed, true, "bounds probe");
            out.assign(bufs.size(), {});
            kept.assign(bufs.size(), 1);
            for (size_t i = 0; i < bufs.size(); ++i) {
                Buffer& b = bufs[i];
                if (!b.bytes) continue;
                kept[i] = first_other(probe[i] + b.bytes, tail, tails[i]) == NO_DIFF;
                if (b.is("in")) continue;
                out[i].resize(b.bytes);
                api(cudaMemcpy(out[i].data(), probe[i], b.bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(bounds probe)");
            }
        };
        auto check_kept = [&](const std::vector<char>& kept) {
            for (size_t i = 0; i < bufs.size(); ++i)
                if (bufs[i].bytes && !kept[i])
                    throw fault(std::string("params.") + bufs[i].spec->name + ".count = " + std::to_string(bufs[i].spec->count) +
                                ": the reference writes past the end of this buffer; the count is smaller than what the "
                                "kernel writes at the MEP's sizes");
        };
        auto differs = [&](const std::vector<std::vector<unsigned char>>& a, const std::vector<std::vector<unsigned char>>& z) {
            for (size_t i = 0; i < bufs.size(); ++i) {
                Buffer& b = bufs[i];
                if (!b.bytes || b.is("in")) continue;
                Check c{b.spec->name, b.spec->role};
                b.spec->cmp(c, "", a[i].data(), z[i].data(), b.spec->count, nullptr, nullptr, rtol_of(b), atol_of(b));
                if (!c.ok) return true;
            }
            return false;
        };
        try {
            std::vector<std::vector<unsigned char>> first, second;
            std::vector<char> kept1, kept2;
            {
                Held held(lock, false, "probe");
                for (size_t i = 0; i < bufs.size(); ++i) {
                    if (!bufs[i].bytes) continue;
                    api(cudaMalloc((void**)&probe[i], bufs[i].bytes + tail), "cudaMalloc(bounds probe)");
                    ptrs[i] = probe[i];
                }
                run(std::vector<unsigned char>(bufs.size(), GUARD_BYTE), first, kept1);
                run(std::vector<unsigned char>(bufs.size(), GUARD_BYTE2), second, kept2);
            }  // the device is released: the comparisons run on the host
            check_kept(kept1);
            check_kept(kept2);
            if (differs(first, second)) {
                for (size_t s = 0; s < bufs.size(); ++s) {
                    if (!bufs[s].bytes) continue;
                    std::vector<unsigned char> tails(bufs.size(), GUARD_BYTE);
                    tails[s] = GUARD_BYTE2;
                    {
                        Held held(lock, false, "probe");
                        run(tails, second, kept2);
                    }
                    check_kept(kept2);
                    if (differs(first, second))
                        throw fault(std::string("params.") + bufs[s].spec->name + ".count = " + std::to_string(bufs[s].spec->count) +
                                    ": the reference reads past the end of this buffer (its results change with what lies "
                                    "after it); the count is smaller than what the kernel reads at the MEP's sizes");
                }
                throw fault("params: the reference's results change with what lies past its buffers; a count in mep.toml "
                            "is smaller than what the kernel reads at the MEP's sizes");
            }
        } catch (...) {
            release();
            throw;
        }
        release();
        probe_state = "clean";
        probe_message = "bounds probe: the reference reads and writes within every buffer (" + std::to_string(tail) + " bytes after each watched)";
        messages.push_back(probe_message);
    }

    // ---- timing ----
    void prepare_timed() {
        for (Buffer& b : bufs) {
            if (!b.bytes) continue;
            if (b.is("out")) api(cudaMemsetAsync(b.data, 0xFF, b.bytes, stream), "cudaMemsetAsync(poison)");
            else if (b.is("inout")) api(cudaMemcpyAsync(b.data, b.saved, b.bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync(restore)");
        }
        if (flush) {
            api(cudaMemsetAsync(flush, 0x5A, flush_bytes, stream), "cudaMemsetAsync(L2 flush)");
            s2s_l2_read<<<1024, 256, 0, stream>>>((const uint4*)flush, flush_bytes / sizeof(uint4), (unsigned*)flush);
            api(cudaGetLastError(), "s2s_l2_read(L2 flush)");
        }
    }

    double timed(const KernelSpec& k, unsigned long long seed, int batch, cudaEvent_t e0, cudaEvent_t e1, bool reference) {
        prepare_timed();
        api(cudaEventRecord(e0, stream), "cudaEventRecord");
        cudaError_t err = cudaSuccess;
        for (int i = 0; i < batch && err == cudaSuccess; ++i) err = k.launch(ptrs.data(), seed, k.grid, k.block, k.shmem, stream);
        api(cudaEventRecord(e1, stream), "cudaEventRecord");
        if (err == cudaSuccess) err = cudaEventSynchronize(e1);
        if (err == cudaSuccess) err = cudaGetLastError();
        if (err != cudaSuccess) {
            Failure f{"runtime-failed", std::string(reference ? "the reference" : "the variant") + " kernel failed while timed: " +
                                            cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")", reference};
            throw f;
        }
        float ms = 0;
        api(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
        return (double)ms * 1000.0 / batch;
    }

    // checked: the first captured set as the checks loaded it (nullptr in a time-only run: read here)
    void time_both(unsigned long long seed, Stats& ref_s, Stats& var_s, const CapturedData* checked = nullptr) {
        int l2 = 0;
        if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0) != cudaSuccess) l2 = 0;
        cudaGetLastError();
        flush_bytes = l2 > 0 ? 2 * (size_t)l2 : (size_t)64 << 20;
        if (cudaMalloc((void**)&flush, flush_bytes) != cudaSuccess) { flush = nullptr; cudaGetLastError(); messages.push_back("no memory for the L2 flush buffer: timed without flushing"); }
        if (!spec.captured.empty()) {  // the application's own data where it was captured: run time can depend on it
            // (a sparse matrix's pattern, a histogram's values); a time-only run reads it here
            const CapturedData cd = checked ? CapturedData{} : load_captured(spec.captured.front(), false);
            fill_set(seed, checked ? checked : &cd);
            messages.push_back("timed on the " + spec.captured.front().label);
        } else {
            fill_set(seed);
        }
        Held held(lock, true, "timing");  // nothing else uses the device until the timing is done
        reset();
        for (Buffer& b : bufs) {
            if (!b.bytes || !b.is("inout")) continue;
            if (b.pristine_ok) { b.saved = b.pristine; continue; }  // reset() left the initial contents on the device
            api(cudaMalloc((void**)&b.saved, b.bytes), "cudaMalloc(saved inout)");
            api(cudaMemcpy(b.saved, b.init.data(), b.bytes, cudaMemcpyHostToDevice), "cudaMemcpy(saved inout)");
        }
        cudaEvent_t e0, e1;
        api(cudaEventCreate(&e0), "cudaEventCreate");
        api(cudaEventCreate(&e1), "cudaEventCreate");
        phase("warm-up");
        std::vector<double> wr, wv;
        while ((int)wr.size() < std::max(1, o.warmup) && warm_more(wr, wv, o.target_s)) {
            wr.push_back(timed(spec.ref, seed, 1, e0, e1, true));
            wv.push_back(timed(spec.var, seed, 1, e0, e1, false));
        }
        const double est = std::min(quantile(wr, 0.5), quantile(wv, 0.5));
        int batch = 1;
        if (est < 10.0) batch = (int)std::min(1000.0, std::ceil(20.0 / std::max(est, 0.02)));
        if (batch > 1) {
            messages.push_back("kernels under 10 us: timed in batches of " + std::to_string(batch) + " launches (per-launch time reported)" +
                               (std::any_of(bufs.begin(), bufs.end(), [](const Buffer& b) { return b.is("inout"); })
                                    ? "; in-out buffers restored once per batch" : ""));
        }
        // slow kernels: as many alternated pairs as fit target_s of device time, at least MIN_TIMED_PAIRS
        const double pair_us = (quantile(wr, 0.5) + quantile(wv, 0.5)) * batch;
        const int reps = timed_pairs(pair_us, o.reps, o.target_s);
        const std::string warm = std::to_string(wr.size()) + " warm-up pair(s)";
        if (reps < o.reps)
            messages.push_back("timed " + std::to_string(reps) + " alternated pairs of at most " + std::to_string(o.reps) +
                               " (timing.repetitions) after " + warm + ": " + fmt(pair_us / 1000.0) + " ms a pair, timing.target_s = " +
                               fmt(o.target_s) + " s of device time per timing");
        else
            messages.push_back("timed " + std::to_string(reps) + " alternated pairs after " + warm + " (" + fmt(pair_us / 1000.0) +
                               " ms a pair)");
        phase("timing");
        std::vector<double> tr, tv;
        for (int r = 0; r < reps; ++r) {
            if (r % 2 == 0) {
                tr.push_back(timed(spec.ref, seed, batch, e0, e1, true));
                tv.push_back(timed(spec.var, seed, batch, e0, e1, false));
            } else {
                tv.push_back(timed(spec.var, seed, batch, e0, e1, false));
                tr.push_back(timed(spec.ref, seed, batch, e0, e1, true));
            }
        }
        ref_s = stats(tr, batch, (int)wr.size());
        var_s = stats(tv, batch, (int)wv.size());
        if (flush) messages.push_back("L2 flushed before every timed launch (" + std::to_string(flush_bytes >> 20) + " MiB written, then read)");
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
    }

    std::string result(const std::string& verdict, const Stats* rs, const Stats* vs, const std::string& input_error, int sets) {
        std::string j = "{\"schema\":1,\"backend\":" + jstr(spec.backend) + ",\"kernel\":" + jstr(spec.kernel) +
                        ",\"device\":" + jstr(device) + ",\"verdict\":" + jstr(verdict) + ",\"input_sets\":" + std::to_string(sets) +
                        ",\"checks\":[";
        for (size_t i = 0; i < checks.size(); ++i) j += (i ? "," : "") + checks[i].json();
        j += "],\"reference\":" + (rs ? stats_json(*rs) : std::string("null"));
        j += ",\"variant\":" + (vs ? stats_json(*vs) : std::string("null"));
        j += ",\"speedup\":" + (rs && vs && vs->median > 0 ? jnum(rs->median / vs->median) : std::string("null"));
        j += ",\"messages\":[";
        for (size_t i = 0; i < messages.size(); ++i) j += (i ? "," : "") + jstr(messages[i]);
        j += "],\"input_error\":" + (input_error.empty() ? std::string("null") : jstr(input_error));
        j += ",\"seed\":" + std::to_string(o.seed);
        j += ",\"probe\":" + (probe_state.empty() ? std::string("null")
                                                  : "{\"state\":" + jstr(probe_state) + ",\"message\":" + jstr(probe_message) + "}");
        if (ref_check_us >= 0) j += ",\"reference_check_us\":" + jnum(ref_check_us);
        if (!o.ref_cache.empty())
            j += ",\"ref_cache\":{\"read\":" + std::to_string(ref_read_sets) + ",\"written\":" + std::to_string(ref_written_sets) + "}";
        j += "}";
        return j;
    }
};

inline int emit(const std::string& json) {
    printf("S2S_RESULT %s\n", json.c_str());
    fflush(stdout);
    return 0;
}

int run_harness(const Spec& spec, int argc, char** argv, unsigned long long layout = LAYOUT) {
    Run run(spec);
    if (layout != LAYOUT) {  // a prebuilt run compiled with other flags than this harness: nothing it reads is safe
        run.messages.push_back("the harness and its prebuilt run (S2S_PREBUILT_RUNTIME) disagree on the layout of their "
                               "shared structs: rebuild with S2S_PREBUILT_RUNTIME=0 in the environment");
        return emit(run.result("runtime-failed", nullptr, nullptr, "", 0));
    }
    std::string err;
    if (!parse_args(argc, argv, run.o, err)) {
        fprintf(stderr, "error: %s\n", err.c_str());
        usage(argv[0]);
        return 2;
    }
    Spec& sp = const_cast<Spec&>(spec);
    if (run.o.has_grid) sp.var.grid = run.o.var_grid;
    if (run.o.has_block) sp.var.block = run.o.var_block;
    if (run.o.has_shmem) sp.var.shmem = run.o.var_shmem;
    if (!run.o.has_seed) {  // fresh inputs every run: a variant cannot be fitted to one seed
        const char* env = getenv("S2S_SEED");
        run.o.seed = env && *env ? strtoull(env, nullptr, 10) : fresh_seed();
    }
    int sets_done = 0;
    // [check] input_sets = 0 on captured data: the reference faulted on generated inputs (integers it indexes with,
    // varied out of its range), so only the application's own data are valid for it; nothing generated is run
    const bool captured_only = run.o.input_sets == 0 && !spec.captured.empty();
    if (run.o.input_sets < 1 && spec.captured.empty()) run.o.input_sets = 1;
    if (captured_only) run.messages.push_back("checked on the application's captured data only ([check] input_sets = 0: "
                                              "no generated input set, no smaller size, no fresh set after timing)");
    try {
        run.lock.host("setup");
        run.setup();
        bool ok = true;
        CapturedData first;  // the first captured set, for the bounds probe, its check and the timing: read once
        const bool captured = run.o.check && !spec.captured.empty();
        if (captured) first = run.load_captured(spec.captured.front(), !run.recorded("captured1"));
        run.shuffle_source = captured ? &first : nullptr;  // the values FILL_SHUFFLE reorders for generated sets
        if (run.o.check && run.o.probe) run.probe_bounds(run.o.seed, captured ? &first : nullptr);
        if (run.o.check && !run.o.probe) run.messages.push_back("bounds probe: not repeated (--no-probe: the caller holds its record)");
        if (run.o.check) {
            for (const CapturedSet& cs : spec.captured) {  // the data of a real run first (s2s capture)
                CapturedData other;
                if (&cs != &spec.captured.front()) other = run.load_captured(cs);
                const CapturedData& cd = &cs == &spec.captured.front() ? first : other;
                const std::string key = "captured" + std::to_string(sets_done + 1);
                run.reproduce(cd, cs.label, key);
                ok = run.check_set(run.o.seed, cs.label, false, &cd, true, key) && ok;
                ++sets_done;
            }
            for (int s = 0; s < run.o.input_sets; ++s) {
                const unsigned long long seed = run.o.seed + (unsigned long long)s;
                ok = run.check_set(seed, "input set " + std::to_string(s + 1) + " (seed " + std::to_string(seed) + ")", s % 2 == 1,
                                   nullptr, true, "seed" + std::to_string(seed), s + 1 < run.o.input_sets && (s + 1) % 2 == 1) && ok;
                ++sets_done;
            }
            const int smaller = captured_only ? -1 : run.check_smaller_size(run.o.seed + 7919ULL);
            if (smaller >= 0) { ok = smaller == 1 && ok; ++sets_done; }
        }
        if (!run.o.ref_cache.empty() && run.o.check)
            run.messages.push_back("the reference's outputs of " + std::to_string(run.ref_read_sets) + " input set(s) read from --ref-cache, of " +
                                   std::to_string(run.ref_written_sets) + " computed and kept there (computed once per input set for a long kernel)" +
                                   (run.reproduce_read ? "; its reproduction of the application's outputs checked by an earlier run" : ""));
        if (!ok) return emit(run.result("wrong-output", nullptr, nullptr, "", sets_done));
        if (!run.o.time) return emit(run.result("ok", nullptr, nullptr, "", sets_done));
        Stats rs, vs;
        run.time_both(run.o.seed, rs, vs, run.o.check && !spec.captured.empty() ? &first : nullptr);
        std::string verdict = "ok";
        if (run.o.check && run.o.post_check && !captured_only) {
            // fresh where the other sets' reference outputs are kept (--ref-cache): one set no earlier run saw
            const unsigned long long seed = run.o.ref_cache.empty() ? run.o.seed + (unsigned long long)run.o.input_sets : fresh_seed();
            if (!run.check_set(seed, "after timing, fresh input set (seed " + std::to_string(seed) + ")")) verdict = "wrong-output";
            ++sets_done;
        }
        if (!run.o.check) run.messages.push_back("outputs were not checked (--time-only)");
        return emit(run.result(verdict, &rs, &vs, "", sets_done));
    } catch (const Failure& f) {
        run.messages.push_back(f.message);
        return emit(run.result(f.verdict, nullptr, nullptr, f.input_error ? f.message : std::string(), sets_done));
    }
}
#endif  // S2S_PREBUILT_RUNTIME
}  // namespace s2s
// ---- end of the generic part ----------------------------------------------------------------
