/* The task: the convolution a load request describes, its tensors, and the
 * reference output every measurement of it is checked against. */
#ifndef ACL_LAUNCHER_TASK_H
#define ACL_LAUNCHER_TASK_H

#include <stddef.h>

#include "aclengine.h"
#include "json.h"

typedef struct {
    int loaded;
    acl_conv_shape shape;
    int oh, ow;
    size_t input_floats, weight_floats, output_floats;
    float *weight, *bias, *input;
    float *residual;   /* NULL unless shape.has_residual */
    float *reference;  /* NULL until task_reference() first computes it */
    float *magnitude;  /* NULL until task_magnitude() first computes it */
} task;

/* Reads a load or check request's "shape" object; fields left out take
 * ConvShape's defaults. */
int parse_conv_shape(const json_value *shape, acl_conv_shape *out);

/* Replaces *t with the task a load request describes.  On failure (with
 * request_error() set) no task is left loaded. */
int task_load(task *t, const json_value *request);
void task_clear(task *t);

/* The output of algorithm "reference", computed on the first call; NULL with
 * request_error() set if the engine fails. */
const float *task_reference(task *t);
/* Per output, sum |x w| + |bias| + |residual|: the reference convolution of
 * the tensors' magnitudes without the activation, which an fp16 kernel's
 * error is bounded by (measure.c); computed on the first call, NULL with
 * request_error() set if the engine fails. */
const float *task_magnitude(task *t);

long long task_flops(const task *t);

/* 64-byte aligned, as the engine aligns its own buffers, so timings do not
 * depend on where malloc happened to place a tensor.  Free with free(). */
float *alloc_floats(size_t n);

#endif
