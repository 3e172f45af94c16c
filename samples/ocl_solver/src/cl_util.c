/*
 * cl_util.c - OpenCL platform/device selection and program building.
 */
#include "cl_util.h"

#include <string.h>

const char* cl_error_string(cl_int err)
{
    switch (err) {
    case CL_SUCCESS:                        return "CL_SUCCESS";
    case CL_DEVICE_NOT_FOUND:               return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE:           return "CL_DEVICE_NOT_AVAILABLE";
    case CL_COMPILER_NOT_AVAILABLE:         return "CL_COMPILER_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:  return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES:               return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY:             return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE:          return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_VALUE:                  return "CL_INVALID_VALUE";
    case CL_INVALID_PLATFORM:               return "CL_INVALID_PLATFORM";
    case CL_INVALID_DEVICE:                 return "CL_INVALID_DEVICE";
    case CL_INVALID_CONTEXT:                return "CL_INVALID_CONTEXT";
    case CL_INVALID_COMMAND_QUEUE:          return "CL_INVALID_COMMAND_QUEUE";
    case CL_INVALID_MEM_OBJECT:             return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_BUILD_OPTIONS:          return "CL_INVALID_BUILD_OPTIONS";
    case CL_INVALID_PROGRAM:                return "CL_INVALID_PROGRAM";
    case CL_INVALID_PROGRAM_EXECUTABLE:     return "CL_INVALID_PROGRAM_EXECUTABLE";
    case CL_INVALID_KERNEL_NAME:            return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL:                 return "CL_INVALID_KERNEL";
    case CL_INVALID_ARG_INDEX:              return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE:              return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE:               return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_KERNEL_ARGS:            return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_DIMENSION:         return "CL_INVALID_WORK_DIMENSION";
    case CL_INVALID_WORK_GROUP_SIZE:        return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_WORK_ITEM_SIZE:         return "CL_INVALID_WORK_ITEM_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE:       return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_BUFFER_SIZE:            return "CL_INVALID_BUFFER_SIZE";
    default:                                return "unknown error";
    }
}

char* cl_read_file(const char* path, size_t* len)
{
    FILE* f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);

    char* buf = (char*)malloc((size_t)size + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    size_t got = fread(buf, 1, (size_t)size, f);
    fclose(f);
    buf[got] = '\0';
    if (len) *len = got;
    return buf;
}

/* Try to build a trivial kernel on <device>; 1 if it works. */
static int device_can_build(cl_device_id device, cl_context* ctx_out)
{
    static const char* probe_src =
        "__kernel void probe(__global int* a) { a[get_global_id(0)] = 1; }\n";
    cl_int err;

    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (err != CL_SUCCESS) return 0;

    cl_program prog = clCreateProgramWithSource(ctx, 1, &probe_src, NULL, &err);
    if (err != CL_SUCCESS) {
        clReleaseContext(ctx);
        return 0;
    }
    err = clBuildProgram(prog, 1, &device, "", NULL, NULL);
    clReleaseProgram(prog);
    if (err != CL_SUCCESS) {
        clReleaseContext(ctx);
        return 0;
    }
    *ctx_out = ctx;
    return 1;
}

int cl_env_init(cl_env* env)
{
    cl_uint nplat = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &nplat);
    if (err != CL_SUCCESS || nplat == 0) {
        fprintf(stderr, "no OpenCL platforms found (err %d)\n", (int)err);
        return -1;
    }
    cl_platform_id* plats = (cl_platform_id*)malloc(nplat * sizeof(cl_platform_id));
    CHECK(clGetPlatformIDs(nplat, plats, NULL), "clGetPlatformIDs");

    int found = 0;
    for (cl_uint p = 0; p < nplat && !found; ++p) {
        char pname[256] = "";
        clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof(pname), pname, NULL);

        cl_uint ndev = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &ndev) != CL_SUCCESS ||
            ndev == 0)
            continue;
        cl_device_id* devs = (cl_device_id*)malloc(ndev * sizeof(cl_device_id));
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, ndev, devs, NULL) != CL_SUCCESS) {
            free(devs);
            continue;
        }

        for (cl_uint d = 0; d < ndev && !found; ++d) {
            char dname[256] = "";
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof(dname), dname, NULL);
            cl_context ctx;
            if (device_can_build(devs[d], &ctx)) {
                env->platform = plats[p];
                env->device   = devs[d];
                env->context  = ctx;
                strncpy(env->platform_name, pname, sizeof(env->platform_name) - 1);
                env->platform_name[sizeof(env->platform_name) - 1] = '\0';
                strncpy(env->device_name, dname, sizeof(env->device_name) - 1);
                env->device_name[sizeof(env->device_name) - 1] = '\0';
                found = 1;
            } else {
                fprintf(stderr, "skipping device '%s' on platform '%s': "
                                "cannot build a test program\n", dname, pname);
            }
        }
        free(devs);
    }
    free(plats);

    if (!found) {
        fprintf(stderr, "no usable OpenCL device found\n");
        return -1;
    }

    env->queue = clCreateCommandQueue(env->context, env->device, 0, &err);
    CHECK(err, "clCreateCommandQueue");
    return 0;
}

void cl_env_release(cl_env* env)
{
    if (env->queue)   clReleaseCommandQueue(env->queue);
    if (env->context) clReleaseContext(env->context);
    env->queue = NULL;
    env->context = NULL;
}

cl_program cl_build_program_from_file(cl_env* env, const char* dir,
                                      const char* file, const char* options)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, file);

    size_t len = 0;
    char* src = cl_read_file(path, &len);
    if (!src) exit(EXIT_FAILURE);

    cl_int err;
    const char* srcs[1] = {src};
    cl_program program = clCreateProgramWithSource(env->context, 1, srcs, &len, &err);
    CHECK(err, "clCreateProgramWithSource");
    free(src);

    char opts[2048];
    snprintf(opts, sizeof(opts), "%s -I%s", options ? options : "", dir);

    err = clBuildProgram(program, 1, &env->device, opts, NULL, NULL);
    if (err != CL_SUCCESS) {
        size_t log_len = 0;
        clGetProgramBuildInfo(program, env->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &log_len);
        char* log = (char*)malloc(log_len + 1);
        clGetProgramBuildInfo(program, env->device, CL_PROGRAM_BUILD_LOG, log_len, log, NULL);
        log[log_len] = '\0';
        fprintf(stderr, "build of %s failed (options \"%s\"):\n%s\n", path, opts, log);
        free(log);
        exit(EXIT_FAILURE);
    }
    return program;
}
