// sequence zoo, OpenCL twin of heat1d_steps: the same time loop (two launches a step, the buffers swapped by setting the
// kernel arguments again, a time index) on any OpenCL device. STEPS and N come from the Makefile.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef N
#define N (1 << 16)
#endif
#ifndef STEPS
#define STEPS 10000
#endif
#define R 0.25f
#define AMP 0.5f

static void check(cl_int err, const char* what)
{
    if (err != CL_SUCCESS) {
        fprintf(stderr, "%s failed: %d\n", what, err);
        exit(3);
    }
}

static char* read_text(const char* path)
{
    FILE* f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(3);
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char* text = (char*)calloc(size + 1, 1);
    if (fread(text, 1, size, f) != (size_t)size)
        exit(3);
    fclose(f);
    return text;
}

int main(void)
{
    cl_int err;
    cl_platform_id platform;
    cl_device_id device;
    check(clGetPlatformIDs(1, &platform, NULL), "clGetPlatformIDs");
    check(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL), "clGetDeviceIDs");
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    check(err, "clCreateContext");
    cl_command_queue queue = clCreateCommandQueue(ctx, device, 0, &err);
    check(err, "clCreateCommandQueue");
    const char* text = read_text("heat1d.cl");
    cl_program program = clCreateProgramWithSource(ctx, 1, &text, NULL, &err);
    check(err, "clCreateProgramWithSource");
    check(clBuildProgram(program, 1, &device, "", NULL, NULL), "clBuildProgram");
    cl_kernel step = clCreateKernel(program, "heat_step", &err);
    check(err, "clCreateKernel heat_step");
    cl_kernel source = clCreateKernel(program, "heat_source", &err);
    check(err, "clCreateKernel heat_source");

    float* h = (float*)malloc(N * sizeof(float));
    unsigned s = 12345u;
    for (int i = 0; i < N; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = (float)(s >> 8) / 16777216.0f;
    }
    cl_mem u = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, N * sizeof(float), h, &err);
    check(err, "clCreateBuffer u");
    cl_mem v = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(float), NULL, &err);
    check(err, "clCreateBuffer v");
    int n = N, at = N / 3;
    float r = R, amp = AMP;
    size_t local = 64, global = (N + 63) / 64 * 64, one = 1;
    check(clSetKernelArg(step, 2, sizeof(int), &n), "clSetKernelArg");
    check(clSetKernelArg(step, 3, sizeof(float), &r), "clSetKernelArg");
    check(clSetKernelArg(source, 1, sizeof(int), &at), "clSetKernelArg");
    check(clSetKernelArg(source, 3, sizeof(float), &amp), "clSetKernelArg");
    for (int t = 0; t < STEPS; t++) {
        check(clSetKernelArg(step, 0, sizeof(cl_mem), &u), "clSetKernelArg");
        check(clSetKernelArg(step, 1, sizeof(cl_mem), &v), "clSetKernelArg");
        check(clEnqueueNDRangeKernel(queue, step, 1, NULL, &global, &local, 0, NULL, NULL), "heat_step");
        check(clSetKernelArg(source, 0, sizeof(cl_mem), &v), "clSetKernelArg");
        check(clSetKernelArg(source, 2, sizeof(int), &t), "clSetKernelArg");
        check(clEnqueueNDRangeKernel(queue, source, 1, NULL, &one, &one, 0, NULL, NULL), "heat_source");
        cl_mem swap = u;
        u = v;
        v = swap;
    }
    float* got = (float*)malloc(N * sizeof(float));
    check(clEnqueueReadBuffer(queue, u, CL_TRUE, 0, N * sizeof(float), got, 0, NULL, NULL), "clEnqueueReadBuffer");
    float* a = h;
    float* b = (float*)malloc(N * sizeof(float));
    for (int t = 0; t < STEPS; t++) {
        for (int i = 0; i < N; i++) {
            float left = i > 0 ? a[i - 1] : a[i];
            float right = i < N - 1 ? a[i + 1] : a[i];
            b[i] = a[i] + R * (left - 2.0f * a[i] + right);
        }
        b[N / 3] += AMP * sinf(0.001f * (float)t);
        float* swap = a;
        a = b;
        b = swap;
    }
    int bad = 0;
    double sum = 0.0;
    for (int i = 0; i < N; i++) {
        sum += got[i];
        bad += fabsf(got[i] - a[i]) > 1e-3f * (1.0f + fabsf(a[i]));
    }
    printf("heat1d_steps_ocl: %s (%d of %d values wrong) checksum %.6e, %d steps\n", bad ? "FAILED" : "ok", bad, N, sum, STEPS);
    return bad != 0;
}
