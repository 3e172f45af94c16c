/*
 * main.cpp - hip_matrix: products of small-integer matrices (every result is
 * exact in float whatever the order of the sums), rows scaled, a running
 * average of the results; prints checksums a run can be checked by.
 *
 *   ./hip_matrix [n]
 */
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <hip/hip_runtime.h>

#include "matrix.h"

#ifndef N_DEFAULT
#define N_DEFAULT 1024
#endif
#ifndef ITERS
#define ITERS 4
#endif

int main(int argc, char** argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : N_DEFAULT;
    if (n < 16 || n > 8192) {
        std::fprintf(stderr, "n must be in 16..8192\n");
        return 2;
    }
    size_t elems = (size_t)n * n;
    std::vector<float> A(elems), B(elems), C(elems), X(elems, 0.0f), s(n);
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
            A[(size_t)i * n + j] = (float)((i * 7 + j * 3) % 5 - 2);
            B[(size_t)i * n + j] = (float)((i * 2 + j * 5) % 3 - 1);
        }
        s[i] = (float)(i % 3 - 1);
    }

    float *dA, *dB, *dC, *dX, *ds;
    HIP_CHECK(hipMalloc(&dA, elems * sizeof(float)));
    HIP_CHECK(hipMalloc(&dB, elems * sizeof(float)));
    HIP_CHECK(hipMalloc(&dC, elems * sizeof(float)));
    HIP_CHECK(hipMalloc(&dX, elems * sizeof(float)));
    HIP_CHECK(hipMalloc(&ds, n * sizeof(float)));
    HIP_CHECK(hipMemcpy(dA, A.data(), elems * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(dB, B.data(), elems * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(dX, X.data(), elems * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(ds, s.data(), n * sizeof(float), hipMemcpyHostToDevice));
    hipStream_t stream;
    HIP_CHECK(hipStreamCreate(&stream));

    double total = 0.0;
    for (int it = 0; it < ITERS; ++it) {
        multiply(dA, dB, dC, n, stream);        /* C = A B */
        scale_rows_f(dC, ds, n, stream);        /* rows of C times -1, 0 or 1 */
        relax(dX, dC, (int)elems, stream);      /* X = (X + C) / 2 */
        HIP_CHECK(hipMemcpyAsync(C.data(), dC, elems * sizeof(float), hipMemcpyDeviceToHost, stream));
        HIP_CHECK(hipStreamSynchronize(stream));
        double sum = 0.0, weighted = 0.0;
        for (size_t e = 0; e < elems; ++e) {
            sum += C[e];
            weighted += C[e] * (double)(e % 97);
        }
        total += sum;
        std::printf("iteration %d: sum %.1f weighted %.1f corner %.1f\n", it, sum, weighted, (double)C[elems - 1]);
    }
    HIP_CHECK(hipMemcpy(X.data(), dX, elems * sizeof(float), hipMemcpyDeviceToHost));
    double xsum = 0.0;
    for (size_t e = 0; e < elems; ++e)
        xsum += X[e] * (double)(e % 13 + 1);
    std::printf("checksum %.1f average %.4f\n", total, xsum);

    HIP_CHECK(hipStreamDestroy(stream));
    HIP_CHECK(hipFree(dA));
    HIP_CHECK(hipFree(dB));
    HIP_CHECK(hipFree(dC));
    HIP_CHECK(hipFree(dX));
    HIP_CHECK(hipFree(ds));
    return 0;
}
