/* The graph commands: a whole-model program (aclgraph.h) built and run over
 * the protocol, one request per call of the API, so that a board without
 * Python can run a compiled model.  A session holds one graph at a time,
 * kept between requests.  Each command adds the answer's members (everything
 * but "ok") to the object open in w, or returns -1 with request_error() set. */
#ifndef ACL_LAUNCHER_GRAPH_SESSION_H
#define ACL_LAUNCHER_GRAPH_SESSION_H

#include <stddef.h>

#include "aclgraph.h"
#include "json.h"

typedef struct {
    acl_graph *graph;
    size_t floats;  /* its arena's */
} graph_session;

int graph_create_command(graph_session *s, const json_value *request, json_writer *w);
int graph_write_command(graph_session *s, const json_value *request, json_writer *w);
int graph_op_command(graph_session *s, const json_value *request, json_writer *w);
int graph_order_command(graph_session *s, const json_value *request, json_writer *w);
int graph_run_command(graph_session *s, const json_value *request, json_writer *w);
/* 0 if the session has a graph, else -1 with the error set. */
int graph_session_require(const graph_session *s);
/* Frees the session's graph, if any. */
void graph_session_clear(graph_session *s);

#endif
