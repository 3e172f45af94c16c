/*
 * cl_util.h - small helpers around the OpenCL 1.2 host API.
 */
#ifndef OCL_SOLVER_CL_UTIL_H
#define OCL_SOLVER_CL_UTIL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>

/* abort with a message when an OpenCL call fails */
#define CHECK(err, what)                                                      \
    do {                                                                      \
        cl_int e_ = (err);                                                    \
        if (e_ != CL_SUCCESS) {                                               \
            fprintf(stderr, "OpenCL error %d (%s) in %s at %s:%d\n",         \
                    (int)e_, cl_error_string(e_), (what), __FILE__, __LINE__);\
            exit(EXIT_FAILURE);                                               \
        }                                                                     \
    } while (0)

/* the selected device and its context / queue */
typedef struct {
    cl_platform_id   platform;
    cl_device_id     device;
    cl_context       context;
    cl_command_queue queue;
    char             platform_name[256];
    char             device_name[256];
} cl_env;

/* Name of an OpenCL error code. */
const char* cl_error_string(cl_int err);

/* Read a whole text file; returns a malloc'ed, NUL terminated buffer. */
char* cl_read_file(const char* path, size_t* len);

/* Walk every platform and device and keep the first device on which a
 * trivial program builds.  Returns 0 on success. */
int cl_env_init(cl_env* env);

void cl_env_release(cl_env* env);

/* Load <dir>/<file>, build it with <options> (plus -I<dir>) and return the
 * program; prints the build log and exits on failure. */
cl_program cl_build_program_from_file(cl_env* env, const char* dir,
                                      const char* file, const char* options);

#endif /* OCL_SOLVER_CL_UTIL_H */
