/* particles_struct_ocl: integrates particles in a loop with a kernel that takes a struct by value and prints the
 * checksum of the final positions.     ./particles_ocl [n] [steps] */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    cl_int n;
    cl_int cells;
    cl_float dt;
    cl_float scale;
    cl_float damping;
} Params;

#define CHECK(e, what) do { if ((e) != CL_SUCCESS) { fprintf(stderr, "%s failed: %d\n", what, (int)(e)); exit(1); } } while (0)

static char* read_text(const char* path)
{
    FILE* f = fopen(path, "rb");
    long size;
    char* text;
    if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(1); }
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    text = (char*)malloc((size_t)size + 1);
    if (fread(text, 1, (size_t)size, f) != (size_t)size) { fprintf(stderr, "cannot read %s\n", path); exit(1); }
    text[size] = 0;
    fclose(f);
    return text;
}

int main(int argc, char** argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 50000;
    int steps = argc > 2 ? atoi(argv[2]) : 10;
    const int cells = 1024;
    cl_int err;
    cl_platform_id platform;
    cl_device_id device;
    float *x = malloc(n * sizeof(float)), *v = malloc(n * sizeof(float)), *mass = malloc(n * sizeof(float));
    float gx[1024];
    double sum = 0.0;
    int i, s;
    for (i = 0; i < n; ++i) { x[i] = (float)(i % 977) * 0.01f; v[i] = 0.0f; mass[i] = 1.0f + (float)(i % 13); }
    for (i = 0; i < cells; ++i) gx[i] = (float)((i * 37) % 101 - 50) * 0.1f;
    CHECK(clGetPlatformIDs(1, &platform, NULL), "clGetPlatformIDs");
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL), "clGetDeviceIDs");
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err, "clCreateContext");
    cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err);
    CHECK(err, "clCreateCommandQueue");
    char* text = read_text("kernels/advance.cl");
    cl_program prog = clCreateProgramWithSource(ctx, 1, (const char**)&text, NULL, &err);
    CHECK(err, "clCreateProgramWithSource");
    CHECK(clBuildProgram(prog, 1, &device, "", NULL, NULL), "clBuildProgram");
    cl_kernel k = clCreateKernel(prog, "advance", &err);
    CHECK(err, "clCreateKernel");
    cl_mem d_x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(float), x, &err);
    CHECK(err, "clCreateBuffer x");
    cl_mem d_v = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(float), v, &err);
    CHECK(err, "clCreateBuffer v");
    cl_mem d_mass = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * sizeof(float), mass, &err);
    CHECK(err, "clCreateBuffer mass");
    cl_mem d_gx = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, cells * sizeof(float), gx, &err);
    CHECK(err, "clCreateBuffer gx");
    Params p;
    p.n = n;
    p.cells = cells;
    p.dt = 0.01f;
    p.scale = 10.0f;
    p.damping = 0.999f;
    size_t local = 64, global = ((size_t)n + local - 1) / local * local;
    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &d_x), "arg 0");
    CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &d_v), "arg 1");
    CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &d_mass), "arg 2");
    CHECK(clSetKernelArg(k, 3, sizeof(cl_mem), &d_gx), "arg 3");
    CHECK(clSetKernelArg(k, 4, sizeof(Params), &p), "arg 4");
    for (s = 0; s < steps; ++s) {
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL), "clEnqueueNDRangeKernel");
    }
    CHECK(clFinish(q), "clFinish");
    CHECK(clEnqueueReadBuffer(q, d_x, CL_TRUE, 0, n * sizeof(float), x, 0, NULL, NULL), "read x");
    for (i = 0; i < n; ++i) sum += x[i];
    printf("particles %d steps %d checksum %.6f\n", n, steps, sum);
    return 0;
}
