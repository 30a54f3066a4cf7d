/* acl-launcher: serves the JSON-lines protocol of PROTOCOL.md on stdin/stdout,
 * so that a tuner can measure the engine locally, under qemu or over ssh. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aclengine.h"
#include "fault.h"
#include "graph_session.h"
#include "json.h"
#include "measure.h"
#include "request.h"
#include "task.h"

#define PROTOCOL_VERSION 5

/* What the launcher keeps between requests: the loaded task and the graph. */
typedef struct {
    task task;
    graph_session graph;
} session;

static const char *const bare_fields[] = {"cmd", NULL};

static int handle_hello(session *s, const json_value *request, json_writer *w)
{
    const char *schema = acl_describe();
    if (request_check_fields(request, "hello", bare_fields)) return -1;
    if (!schema) return request_fail("%s", acl_last_error());
    json_key(w, "protocol");
    json_int(w, PROTOCOL_VERSION);
    json_key(w, "version");
    json_string(w, acl_version());
    json_key(w, "fingerprint");
    json_string(w, acl_fingerprint());
    json_key(w, "isa");
    json_string(w, acl_isa());
    json_key(w, "cpus");
    json_int(w, acl_cpu_count());
    json_key(w, "largest_cache_bytes");
    json_int(w, measure_largest_cache_bytes());

    json_key(w, "algorithms");
    json_array_begin(w);
    for (int i = 0; i < acl_algorithm_count(); i++) {
        const char *name = acl_algorithm_name(i);
        json_object_begin(w);
        json_key(w, "name");
        json_string(w, name);
        json_key(w, "uses_ukernel");
        json_bool(w, acl_algorithm_uses_ukernel(name) == 1);
        json_object_end(w);
    }
    json_array_end(w);

    json_key(w, "ukernels");
    json_array_begin(w);
    for (int i = 0; i < acl_ukernel_count(); i++) {
        acl_ukernel_info uk;
        if (acl_ukernel_get(i, &uk)) return request_fail("%s", acl_last_error());
        const struct {
            const char *key;
            int value;
        } ints[] = {{"mr", uk.mr},
                    {"nr", uk.nr},
                    {"kmin", uk.kmin},
                    {"kmax", uk.kmax},
                    {"n_multiple", uk.n_multiple}};
        json_object_begin(w);
        json_key(w, "name");
        json_string(w, uk.name);
        json_key(w, "isa");
        json_string(w, uk.isa);
        json_key(w, "style");
        json_string(w, uk.style);
        json_key(w, "precision");
        json_string(w, uk.precision);
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
            json_key(w, ints[k].key);
            json_int(w, ints[k].value);
        }
        json_object_end(w);
    }
    json_array_end(w);

    json_key(w, "int8_ukernels");
    json_array_begin(w);
    for (int i = 0; i < acl_int8_ukernel_count(); i++) {
        const char *name = acl_int8_ukernel_name(i);
        if (!name) return request_fail("%s", acl_last_error());
        json_string(w, name);
    }
    json_array_end(w);
    json_key(w, "schema");
    json_raw(w, schema);
    return 0;
}

static int handle_load(session *s, const json_value *request, json_writer *w)
{
    task *t = &s->task;
    if (task_load(t, request)) return -1;
    json_key(w, "output_shape");
    json_array_begin(w);
    json_int(w, t->shape.n);
    json_int(w, t->oh);
    json_int(w, t->ow);
    json_int(w, t->shape.oc);
    json_array_end(w);
    json_key(w, "flops");
    json_int(w, task_flops(t));
    return 0;
}

static int handle_check(session *s, const json_value *request, json_writer *w)
{
    static const char *const fields[] = {"cmd", "shape", "algorithm", "ukernel", NULL};
    const json_value *shape_json = NULL;
    acl_conv_shape shape;
    const char *algorithm = NULL, *ukernel = NULL;
    if (request_check_fields(request, "check", fields) ||
        request_member(request, "shape", REQUIRED, JSON_OBJECT, &shape_json) ||
        parse_conv_shape(shape_json, &shape) ||
        request_string(request, "algorithm", REQUIRED, 0, &algorithm) ||
        request_string(request, "ukernel", OPTIONAL, 1, &ukernel))
        return -1;
    int supported = acl_conv_check(&shape, algorithm, ukernel) == 0;
    json_key(w, "supported");
    json_bool(w, supported);
    if (!supported) {
        json_key(w, "reason");
        json_string(w, acl_last_error());
    }
    return 0;
}

static int handle_quit(session *s, const json_value *request, json_writer *w)
{
    return request_check_fields(request, "quit", bare_fields);
}

static int handle_measure(session *s, const json_value *request, json_writer *w)
{
    fault_inject(request);
    return measure_command(&s->task, request, w);
}

/* The lowest real-time priority for this thread and the pool's workers,
 * which start later and inherit it: another process keeping a measured core
 * busy (a user's job, a daemon) no longer takes turns with the measurement,
 * which it otherwise slows by its share of the core, and the tuner no longer
 * picks configs that merely avoided that core.  The kernel's real-time
 * throttling still leaves the other processes a slice of every second, so a
 * config that hangs cannot lock the machine. */
static int handle_realtime(session *s, const json_value *request, json_writer *w)
{
    (void)s;
    if (request_check_fields(request, "realtime", bare_fields)) return -1;
    struct sched_param param = {.sched_priority = sched_get_priority_min(SCHED_FIFO)};
    const int rc = sched_setscheduler(0, SCHED_FIFO, &param);
    json_key(w, "scheduling");
    json_string(w, rc == 0 ? "fifo" : "normal");
    if (rc != 0) {
        json_key(w, "reason");
        json_string(w, strerror(errno));
    }
    return 0;
}

/* The graph commands act on the session's graph. */
#define GRAPH_HANDLER(name)                                                          \
    static int handle_##name(session *s, const json_value *request, json_writer *w) \
    {                                                                                \
        return name##_command(&s->graph, request, w);                                \
    }
GRAPH_HANDLER(graph_create)
GRAPH_HANDLER(graph_write)
GRAPH_HANDLER(graph_op)
GRAPH_HANDLER(graph_order)
GRAPH_HANDLER(graph_run)

/* Every command, answered by handle_<name>. */
#define LAUNCHER_COMMANDS(X)                                                              \
    X(hello) X(realtime) X(load) X(measure) X(check) X(graph_create) X(graph_write) X(graph_op) \
    X(graph_order) X(graph_run) X(quit)

static const struct {
    const char *name;
    int (*handle)(session *s, const json_value *request, json_writer *w);
} commands[] = {
#define COMMAND_ENTRY(name) {#name, handle_##name},
    LAUNCHER_COMMANDS(COMMAND_ENTRY)};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* "hello, realtime, ... or quit", for the error of an unknown command. */
static const char *command_names(void)
{
#define COMMAND_NAME_LENGTH(name) sizeof #name + 2 +
    static char names[LAUNCHER_COMMANDS(COMMAND_NAME_LENGTH) 1];
    if (!names[0])
        for (size_t i = 0; i < NCOMMANDS; i++) {
            const char *sep = i == 0 ? "" : i + 1 < NCOMMANDS ? ", " : " or ";
            strcat(strcat(names, sep), commands[i].name);
        }
    return names;
}

static int dispatch(session *s, const json_value *request, json_writer *w, int *quit)
{
    const char *cmd = NULL;
    if (request->type != JSON_OBJECT)
        return request_fail("a request must be an object, got %s", json_type_name(request->type));
    if (request_string(request, "cmd", REQUIRED, 0, &cmd)) return -1;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, cmd) == 0) {
            *quit = commands[i].handle == handle_quit;
            return commands[i].handle(s, request, w);
        }
    return request_fail("unknown command \"%s\" (expected %s)", cmd, command_names());
}

static void write_error(json_writer *w, const char *error)
{
    json_writer_reset(w);
    json_object_begin(w);
    json_key(w, "ok");
    json_bool(w, 0);
    json_key(w, "error");
    json_string(w, error);
    json_object_end(w);
}

/* Answers one request line into w; returns 1 if it was a successful quit. */
static int serve_line(session *s, const char *line, size_t len, json_writer *w)
{
    json_value request;
    char parse_error[256];
    int quit = 0;
    int rc;
    request_error_clear();
    json_object_begin(w);
    json_key(w, "ok");
    json_bool(w, 1);
    if (json_parse(line, len, &request, parse_error, sizeof parse_error)) {
        rc = request_fail("%s", parse_error);
    } else {
        rc = dispatch(s, &request, w, &quit);
        json_free(&request);
    }
    json_object_end(w);
    if (rc) {
        /* A failed command may have written part of its answer: start over. */
        write_error(w, request_error());
        return 0;
    }
    if (w->out_of_memory) write_error(w, "out of memory writing the answer");
    return quit;
}

/* A request line's longest, without its newline (PROTOCOL.md): a load or
 * graph_write carries whole tensors as base64, and a hostile line is
 * refused before it costs more than this. */
#define MAX_LINE_BYTES ((size_t)1 << 30)
enum { LINE_END = -1, LINE_TOO_LONG = -2, LINE_NO_MEMORY = -3 };

/* Reads one line into *buf, without its newline, so that error offsets count
 * only the request: its length, or LINE_END at the end of input, or
 * LINE_TOO_LONG / LINE_NO_MEMORY for a line read to its end and dropped. */
static ssize_t read_line(FILE *in, char **buf, size_t *cap)
{
    size_t len = 0;
    ssize_t dropped = 0;
    int c;
    while ((c = getc_unlocked(in)) != EOF && c != '\n') {
        if (dropped) continue;
        if (len == MAX_LINE_BYTES) {
            dropped = LINE_TOO_LONG;
            continue;
        }
        if (len == *cap) {
            size_t grown = *cap ? *cap * 2 : 4096;
            char *bigger = realloc(*buf, grown < MAX_LINE_BYTES ? grown : MAX_LINE_BYTES);
            if (!bigger) {
                dropped = LINE_NO_MEMORY;
                continue;
            }
            *buf = bigger;
            *cap = grown < MAX_LINE_BYTES ? grown : MAX_LINE_BYTES;
        }
        (*buf)[len++] = (char)c;
    }
    if (dropped) return dropped;
    return c == EOF && len == 0 ? LINE_END : (ssize_t)len;
}

/* The stream answers go to.  The process's own stdout is pointed at stderr,
 * so a stray printf anywhere in the engine cannot corrupt the protocol. */
static FILE *open_protocol_stream(void)
{
    int fd = dup(STDOUT_FILENO);
    if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return NULL;
    return fdopen(fd, "w");
}

int main(void)
{
    FILE *answers = open_protocol_stream();
    if (!answers) {
        perror("acl-launcher: cannot set up the answer stream");
        return 1;
    }
    session s = {0};
    json_writer w;
    json_writer_init(&w);
    char *line = NULL;
    size_t line_cap = 0;
    ssize_t len;
    int quit = 0;
    while (!quit && (len = read_line(stdin, &line, &line_cap)) != LINE_END) {
        json_writer_reset(&w);
        if (len == LINE_TOO_LONG) {
            char error[80];
            snprintf(error, sizeof error, "the request line is longer than %zu bytes",
                     MAX_LINE_BYTES);
            write_error(&w, error);
        } else if (len == LINE_NO_MEMORY) write_error(&w, "out of memory reading the request line");
        else quit = serve_line(&s, line, (size_t)len, &w);
        fwrite(w.data, 1, w.len, answers);
        fputc('\n', answers);
        if (fflush(answers) != 0) {
            perror("acl-launcher: writing an answer");
            return 1;
        }
    }
    free(line);
    json_writer_free(&w);
    task_clear(&s.task);
    graph_session_clear(&s.graph);
    return 0;
}
