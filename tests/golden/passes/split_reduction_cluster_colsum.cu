// RUN: split-reduction{splits=4 cols=8 quad=4 cluster=2}
// ----- INPUT
__global__ void colsum(const float* A, const float* w, float* out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (long r = 1; r <= rows; r++)
            s += A[(r - 1) * cols + c] * w[r - 1] * 0.5f;
        out[c] = s;
    }
}
// ----- EXPECTED
__global__ void __cluster_dims__(1, 2, 1) __launch_bounds__(32, 32) colsum(const float* A, const float* w, float* out, int rows, int cols)
{
    int c4 = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    #if defined(__HIP_PLATFORM_AMD__) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900)
    #error "split-reduction{cluster}: thread-block clusters need CUDA on sm_90 or newer"
    #endif
    __shared__ float red[4][32];
    __shared__ float blk[32];
    const int s1 = threadIdx.y;
    const long chunk = (((rows) + 1) - (1) + 1) / 2;
    const long r_lo = 1 + static_cast<long>(blockIdx.y) * chunk, r_hi = r_lo + chunk;  // this block's rows
    float part0 = 0, part1 = 0, part2 = 0, part3 = 0;
    bool quad_ok = ((reinterpret_cast<unsigned long long>(&A[((1) - 1) * cols + (c4)]) | reinterpret_cast<unsigned long long>(&A[(((1) + 1) - 1) * cols + (c4)])) & 15) == 0;
    { int c = c4 + 0; quad_ok = quad_ok && (c < cols); }
    { int c = c4 + 1; quad_ok = quad_ok && (c < cols); }
    { int c = c4 + 2; quad_ok = quad_ok && (c < cols); }
    { int c = c4 + 3; quad_ok = quad_ok && (c < cols); }
    if (quad_ok) {
        long r0 = r_lo + s1;
        for (; (r0 + 28) <= rows && (r0 + 28) < r_hi; r0 += 32) {
            const float4 w10_0 = *reinterpret_cast<const float4*>(&A[((r0 + 0) - 1) * cols + (c4)]);
            const float4 w10_1 = *reinterpret_cast<const float4*>(&A[((r0 + 4) - 1) * cols + (c4)]);
            const float4 w10_2 = *reinterpret_cast<const float4*>(&A[((r0 + 8) - 1) * cols + (c4)]);
            const float4 w10_3 = *reinterpret_cast<const float4*>(&A[((r0 + 12) - 1) * cols + (c4)]);
            const float4 w10_4 = *reinterpret_cast<const float4*>(&A[((r0 + 16) - 1) * cols + (c4)]);
            const float4 w10_5 = *reinterpret_cast<const float4*>(&A[((r0 + 20) - 1) * cols + (c4)]);
            const float4 w10_6 = *reinterpret_cast<const float4*>(&A[((r0 + 24) - 1) * cols + (c4)]);
            const float4 w10_7 = *reinterpret_cast<const float4*>(&A[((r0 + 28) - 1) * cols + (c4)]);
            const auto f1_0 = w[(r0 + 0) - 1];
            const auto f1_1 = w[(r0 + 4) - 1];
            const auto f1_2 = w[(r0 + 8) - 1];
            const auto f1_3 = w[(r0 + 12) - 1];
            const auto f1_4 = w[(r0 + 16) - 1];
            const auto f1_5 = w[(r0 + 20) - 1];
            const auto f1_6 = w[(r0 + 24) - 1];
            const auto f1_7 = w[(r0 + 28) - 1];
            part0 += w10_0.x * f1_0 * 0.5f; part1 += w10_0.y * f1_0 * 0.5f; part2 += w10_0.z * f1_0 * 0.5f; part3 += w10_0.w * f1_0 * 0.5f;
            part0 += w10_1.x * f1_1 * 0.5f; part1 += w10_1.y * f1_1 * 0.5f; part2 += w10_1.z * f1_1 * 0.5f; part3 += w10_1.w * f1_1 * 0.5f;
            part0 += w10_2.x * f1_2 * 0.5f; part1 += w10_2.y * f1_2 * 0.5f; part2 += w10_2.z * f1_2 * 0.5f; part3 += w10_2.w * f1_2 * 0.5f;
            part0 += w10_3.x * f1_3 * 0.5f; part1 += w10_3.y * f1_3 * 0.5f; part2 += w10_3.z * f1_3 * 0.5f; part3 += w10_3.w * f1_3 * 0.5f;
            part0 += w10_4.x * f1_4 * 0.5f; part1 += w10_4.y * f1_4 * 0.5f; part2 += w10_4.z * f1_4 * 0.5f; part3 += w10_4.w * f1_4 * 0.5f;
            part0 += w10_5.x * f1_5 * 0.5f; part1 += w10_5.y * f1_5 * 0.5f; part2 += w10_5.z * f1_5 * 0.5f; part3 += w10_5.w * f1_5 * 0.5f;
            part0 += w10_6.x * f1_6 * 0.5f; part1 += w10_6.y * f1_6 * 0.5f; part2 += w10_6.z * f1_6 * 0.5f; part3 += w10_6.w * f1_6 * 0.5f;
            part0 += w10_7.x * f1_7 * 0.5f; part1 += w10_7.y * f1_7 * 0.5f; part2 += w10_7.z * f1_7 * 0.5f; part3 += w10_7.w * f1_7 * 0.5f;
        }
        for (; (r0) <= rows && (r0) < r_hi; r0 += 4) {
            const float4 w10_0 = *reinterpret_cast<const float4*>(&A[((r0 + 0) - 1) * cols + (c4)]);
            const auto f1_0 = w[(r0 + 0) - 1];
            part0 += w10_0.x * f1_0 * 0.5f; part1 += w10_0.y * f1_0 * 0.5f; part2 += w10_0.z * f1_0 * 0.5f; part3 += w10_0.w * f1_0 * 0.5f;
        }
    } else {
        { int c = c4 + 0;
            float part = 0;
            if (c < cols)
                for (long r = r_lo + s1; (r) <= rows && (r) < r_hi; r += 4)
                    part += A[(r - 1) * cols + c] * w[r - 1] * 0.5f;
            part0 = part;
        }
        { int c = c4 + 1;
            float part = 0;
            if (c < cols)
                for (long r = r_lo + s1; (r) <= rows && (r) < r_hi; r += 4)
                    part += A[(r - 1) * cols + c] * w[r - 1] * 0.5f;
            part1 = part;
        }
        { int c = c4 + 2;
            float part = 0;
            if (c < cols)
                for (long r = r_lo + s1; (r) <= rows && (r) < r_hi; r += 4)
                    part += A[(r - 1) * cols + c] * w[r - 1] * 0.5f;
            part2 = part;
        }
        { int c = c4 + 3;
            float part = 0;
            if (c < cols)
                for (long r = r_lo + s1; (r) <= rows && (r) < r_hi; r += 4)
                    part += A[(r - 1) * cols + c] * w[r - 1] * 0.5f;
            part3 = part;
        }
    }
    red[s1][4 * threadIdx.x + 0] = part0;
    red[s1][4 * threadIdx.x + 1] = part1;
    red[s1][4 * threadIdx.x + 2] = part2;
    red[s1][4 * threadIdx.x + 3] = part3;
    __syncthreads();
    for (int col = threadIdx.y * 8 + threadIdx.x; col < 32; col += 32) {  // the block's threads in order
        float part = red[0][col];
        for (int rank = 1; rank < 4; ++rank)
            part += red[rank][col];
        blk[col] = part;
    }
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
    if (blockIdx.y == 0) {  // the cluster's blocks in rank order, through distributed shared memory
        for (int col = threadIdx.y * 8 + threadIdx.x; col < 32; col += 32) {
            float part = 0;
            for (int rank = 0; rank < 2; ++rank)
                part += static_cast<float*>(__cluster_map_shared_rank(blk, rank))[col];
            int c = 4 * (blockIdx.x * blockDim.x + (col / 4)) + col % 4;
            if (c < cols) {
                float s = 0.0f;
                s += part;
                out[c] = s;
            }
        }
    }
    __cluster_barrier_arrive();  // no block leaves while block 0 reads its shared memory
    __cluster_barrier_wait();
}
