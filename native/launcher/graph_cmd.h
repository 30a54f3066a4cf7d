/* The graph commands: a whole-model program (aclgraph.h) built and run over
 * the protocol, one request per call of the API, so that a board without
 * Python can run a compiled model.  One graph at a time, kept between
 * requests.  Each command adds the answer's members (everything but "ok") to
 * the object open in w, or returns -1 with request_error() set. */
#ifndef ACL_LAUNCHER_GRAPH_CMD_H
#define ACL_LAUNCHER_GRAPH_CMD_H

#include "json.h"
#include "task.h"

int graph_create_command(task *t, const json_value *request, json_writer *w);
int graph_write_command(task *t, const json_value *request, json_writer *w);
int graph_op_command(task *t, const json_value *request, json_writer *w);
int graph_order_command(task *t, const json_value *request, json_writer *w);
int graph_run_command(task *t, const json_value *request, json_writer *w);
/* Frees the current graph, if any. */
void graph_clear(void);

#endif
