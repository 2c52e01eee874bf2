//! The OpenAPI 3.0 document served at `/openapi.json`, written by hand next to
//! [`crate::server::ROUTES`]; a test checks that every route is in it and nothing else.

use serde_json::{json, Value};

fn op(summary: &str, auth: bool, body: Option<&str>, ok: (&str, &str), errors: &[u16]) -> Value {
    let mut responses = serde_json::Map::new();
    responses.insert(
        ok.0.to_string(),
        json!({"description": "success", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{}", ok.1)}}}}),
    );
    for e in errors {
        responses.insert(
            e.to_string(),
            json!({"description": error_text(*e), "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}),
        );
    }
    // every route counts against its client's rate limit
    responses.insert(
        "429".to_string(),
        json!({"description": error_text(429), "headers": {"Retry-After": {"schema": {"type": "integer"}, "description": "seconds until one more request fits"}}, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}),
    );
    let mut v = json!({"summary": summary, "responses": responses});
    if auth {
        v["security"] = json!([{"bearer": []}]);
    }
    if let Some(schema) = body {
        v["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}});
    }
    v
}

fn error_text(status: u16) -> &'static str {
    match status {
        400 => "malformed body or query; `field` names the part",
        401 => "no token or an invalid one",
        403 => "a tenant's token used for another tenant or an admin route",
        404 => "no such tenant",
        409 => "the name is taken",
        413 => "the body is too large",
        415 => "the body is not application/json",
        422 => "a value is not acceptable; `field` names it",
        429 => "too many requests from this client (its token, or its address without one): mutating requests and reads have separate per-client limits; Retry-After says when to retry",
        _ => "error",
    }
}

fn name_param() -> Value {
    json!([{"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}])
}

/// `ops` with the path parameters `names` (strings).
fn with_params(mut ops: Value, names: &[&str]) -> Value {
    ops["parameters"] = names
        .iter()
        .map(|n| json!({"name": n, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect();
    ops
}

/// The document.
pub fn document() -> Value {
    let write = [400, 401, 403, 413, 415, 422, 429];
    let mut tenant_ops = op(
        "Submit a tenant: it is characterized, placed if no server is given, decided by the admission policy; the decision is committed before the answer (201 admitted, 200 rejected)",
        true,
        Some("NewTenant"),
        ("201", "Admitted"),
        &[400, 401, 403, 409, 413, 415, 422, 429],
    );
    tenant_ops["responses"]["200"] = json!({"description": "rejected: the decision says why", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Admitted"}}}});
    let mut one = json!({
        "get": op("An admitted tenant (admin, or the tenant's own token)", true, None, ("200", "Tenant"), &[401, 403, 404]),
        "delete": op("Depart: the tenant leaves; the decision is committed before the answer", true, None, ("200", "Decision"), &[401, 403, 404, 429]),
    });
    one["parameters"] = name_param();
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "tailbound controller service",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Tenants admitted and placed one at a time with tail-latency SLOs (SNC-Meister admission, WorkloadCompactor placement); state in SQLite."
        },
        "paths": {
            "/healthz": {"get": op("Liveness and the state's size", false, None, ("200", "Health"), &[])},
            "/metrics": {"get": {"summary": "Prometheus metrics (text format 0.0.4)", "responses": {"200": {"description": "metrics", "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
            "/status": {"get": {"summary": "Read-only status page: tenants' bounds against their SLOs, queue loads and headroom, recent decisions", "responses": {"200": {"description": "HTML", "content": {"text/html": {"schema": {"type": "string"}}}}}}},
            "/openapi.json": {"get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3.0 document", "content": {"application/json": {"schema": {"type": "object"}}}}}}},
            "/v1/hosts": {
                "get": op("Registered hosts", true, None, ("200", "Hosts"), &[401]),
                "post": op("Register a host (admin)", true, Some("NewHost"), ("201", "Host"), &write),
            },
            "/v1/tenants": {
                "get": op("Admitted tenants (a tenant's token sees only its own)", true, None, ("200", "Tenants"), &[401]),
                "post": tenant_ops,
            },
            "/v1/tenants/{name}": one,
            "/v1/what-if": {"post": op("Would this tenant be admitted? No state changes (admin)", true, Some("NewTenant"), ("200", "Decision"), &[400, 401, 403, 409, 413, 415, 422])},
            "/v1/decisions": {"get": {
                "summary": "The decision log after `since`, oldest first (a tenant's token sees only its own)",
                "security": [{"bearer": []}],
                "parameters": [
                    {"name": "since", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000}}
                ],
                "responses": {"200": {"description": "decisions", "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Decision"}}}}}}
            }},
            "/v1/bounds": {"get": op("Every admitted tenant's bound now (a tenant's token: its own)", true, None, ("200", "Bounds"), &[401])},
            "/v1/hosts/{host}/decisions": {"get": {
                "summary": "What a host's tc agent enforces (the admin token, or the host's own from POST /v1/hosts/{host}/token; another host's token gets 403): the admitted tenants whose client or server is the host, with priority and limits, at a version that only grows (the latest decision's number). With `since`, waits up to `wait` seconds for a newer version (long poll); `applied` reports the agent's applied version (GET /v1/agents, /status)",
                "security": [{"bearer": []}],
                "parameters": [
                    {"name": "host", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "since", "in": "query", "schema": {"type": "integer", "minimum": 0}},
                    {"name": "wait", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": crate::server::MAX_WAIT_S}},
                    {"name": "applied", "in": "query", "schema": {"type": "integer", "minimum": 0}}
                ],
                "responses": {
                    "200": {"description": "the host's decisions", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HostDecisions"}}}},
                    "400": {"description": error_text(400), "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                    "401": {"description": error_text(401), "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                    "403": {"description": error_text(403), "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                    "404": {"description": "no such host", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                    "422": {"description": error_text(422), "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
                    "429": {"description": error_text(429), "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
                }
            }},
            "/v1/hosts/{host}/token": with_params(json!({"post": op("Issue the host agent's token (admin): it reads only this host's decisions and acts only as enforcer {host} of VDCs; shown once, stored as its SHA-256; an earlier token of the host stops working", true, None, ("201", "HostToken"), &[401, 403, 404])}), &["host"]),
            "/v1/agents": {"get": op("Host agents as last seen: applied version, how many decisions behind, when (admin)", true, None, ("200", "Agents"), &[401, 403])},
            "/v1/vdcs": {
                "get": op("Hosted VDCs (admin)", true, None, ("200", "Vdcs"), &[401, 403]),
                "post": op("Submit a VDC file (Pulsar): validated as `tailbound vdc check` does, stored, and given its own controller, reached by enforcers at /v1/vdcs/{vdc} (admin)", true, Some("NewVdc"), ("201", "Vdc"), &[400, 401, 403, 409, 413, 415, 422]),
            },
            "/v1/vdcs/{vdc}": with_params(json!({
                "get": op("A VDC with its file (admin)", true, None, ("200", "Vdc"), &[401, 403, 404]),
                "delete": op("Remove a VDC: its controller stops, its enforcers get 404 (admin)", true, None, ("200", "Vdc"), &[401, 403, 404]),
            }), &["vdc"]),
            "/v1/vdcs/{vdc}/datacenter": with_params(json!({"get": op("What an enforcer fetches first: the compiled VDC file, the control interval, samples per interval, minimum rate, carry-over (tailbound_control::protocol::DatacenterInfo; admin or a host token)", true, None, ("200", "ControlDatacenter"), &[401, 403, 404])}), &["vdc"]),
            "/v1/vdcs/{vdc}/status": with_params(json!({"get": op("The VDC's allocations: every flow's demand estimate, allocation and guaranteed part per hop; enforcers (stale ones flagged, they keep their last allocation); resources; violated tenants (tailbound_control::protocol::Status; admin or a host token)", true, None, ("200", "ControlStatus"), &[401, 403, 404])}), &["vdc"]),
            "/v1/vdcs/{vdc}/enforcers/{id}/register": with_params(json!({"post": op("An enforcer registers the flows it polices (tenant/flow) and gets their allocation; stored before it is answered (admin, or the token of host {id})", true, Some("ControlRegister"), ("200", "ControlAllocation"), &[400, 401, 403, 404, 413, 415, 422])}), &["vdc", "id"]),
            "/v1/vdcs/{vdc}/enforcers/{id}/report": with_params(json!({"post": op("An enforcer's report of one interval: per flow and hop, utilization, backlog, queueing, outstanding and completed tokens; answers its latest allocation vectors (admin, or the token of host {id})", true, Some("ControlReport"), ("200", "ControlAllocation"), &[400, 401, 403, 404, 413, 415, 422])}), &["vdc", "id"]),
            "/v1/vdcs/{vdc}/enforcers/{id}/allocation": with_params(json!({"get": op("An enforcer's latest allocation vectors (admin, or the token of host {id})", true, None, ("200", "ControlAllocation"), &[400, 401, 403, 404])}), &["vdc", "id"]),
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": schemas()
        }
    })
}

/// The bodies' schemas.
fn schemas() -> Value {
    json!({
        "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}, "field": {"type": "string"}}},
        "Health": {"type": "object", "properties": {"status": {"type": "string"}, "tenants": {"type": "integer"}, "hosts": {"type": "integer"}, "seq": {"type": "integer"}}},
        "NewHost": {"type": "object", "required": ["name", "link"], "additionalProperties": false, "properties": {
            "name": {"type": "string"},
            "link": {"oneOf": [{"type": "number", "description": "bytes/s"}, {"type": "string", "example": "1Gbit"}]},
            "storage": {"type": "number", "description": "storage rate [busy-s/s], e.g. 1 for one SSD; absent: no storage"}
        }},
        "Host": {"type": "object", "properties": {"name": {"type": "string"}, "link_bytes_per_s": {"type": "number"}, "storage_rate": {"type": "number", "nullable": true}}},
        "Hosts": {"type": "array", "items": {"$ref": "#/components/schemas/Host"}},
        "NewTenant": {"type": "object", "required": ["name", "client", "slo", "traffic"], "additionalProperties": false, "properties": {
            "name": {"type": "string"},
            "client": {"type": "string"},
            "server": {"type": "string", "description": "absent: placed by the service"},
            "slo": {"oneOf": [{"type": "number", "description": "seconds"}, {"type": "string", "example": "20ms"}]},
            "percentile": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 100, "default": 99.9},
            "storage": {"type": "boolean", "default": false},
            "depends_on": {"type": "array", "items": {"type": "string"}},
            "traffic": {"$ref": "#/components/schemas/Traffic"}
        }},
        "Traffic": {"type": "object", "additionalProperties": false, "description": "exactly one of trace, model, flows", "properties": {
            "trace": {"type": "string", "description": "the text of a trace file"},
            "model": {"type": "object", "description": "a synthetic generator spec: arrival, sizes, read_fraction, duration_s, vocabulary"},
            "seed": {"type": "integer"},
            "flows": {"type": "array", "items": {"type": "object", "required": ["stage"], "properties": {
                "stage": {"type": "string", "enum": ["net-in", "storage", "net-out"]},
                "mmpp": {"type": "object"},
                "arrival": {"type": "object"}
            }}}
        }},
        "Decision": {"type": "object", "properties": {
            "seq": {"type": "integer"}, "kind": {"type": "string", "enum": ["arrive", "depart", "what-if"]},
            "tenant": {"type": "string"}, "admitted": {"type": "boolean"}, "policy": {"type": "string"},
            "server": {"type": "string", "nullable": true}, "placed": {"type": "boolean"},
            "slo": {"type": "object"}, "bound_s": {"type": "number", "nullable": true},
            "priority": {"type": "integer", "nullable": true}, "reason": {"type": "string", "nullable": true},
            "queues": {"type": "array", "items": {"type": "object", "properties": {"queue": {"type": "string"}, "rate": {"type": "number"}, "load": {"type": "number"}, "tenants": {"type": "array", "items": {"type": "string"}}}}},
            "changed": {"type": "array", "items": {"type": "object"}},
            "limits": {"type": "array", "items": {"type": "object"}},
            "at_ms": {"type": "integer"}
        }},
        "Admitted": {"type": "object", "properties": {"decision": {"$ref": "#/components/schemas/Decision"}, "token": {"type": "string", "nullable": true, "description": "the tenant's own token, shown once"}}},
        "Tenant": {"type": "object", "properties": {
            "name": {"type": "string"}, "client": {"type": "string"}, "server": {"type": "string"}, "placed": {"type": "boolean"},
            "slo": {"type": "object"}, "storage": {"type": "boolean"}, "group": {"type": "string", "nullable": true},
            "priority": {"type": "integer", "nullable": true}, "admitted_bound_s": {"type": "number", "nullable": true}, "seq": {"type": "integer"}
        }},
        "HostDecisions": {"type": "object", "properties": {
            "host": {"type": "string"}, "version": {"type": "integer"},
            "decisions": {"type": "object", "description": "tailbound decisions (as `tailbound enforce` reads): policy, tenants [{name, admitted, priority, server, limits}], excess"},
            "endpoints": {"type": "array", "items": {"type": "object", "properties": {"tenant": {"type": "string"}, "client": {"type": "string"}, "server": {"type": "string"}}}}
        }},
        "Agents": {"type": "array", "items": {"type": "object", "properties": {"host": {"type": "string"}, "applied": {"type": "integer"}, "behind": {"type": "integer"}, "seen_ms": {"type": "integer"}}}},
        "HostToken": {"type": "object", "properties": {"host": {"type": "string"}, "token": {"type": "string", "description": "shown once"}}},
        "Tenants": {"type": "array", "items": {"$ref": "#/components/schemas/Tenant"}},
        "NewVdc": {"type": "object", "required": ["name"], "additionalProperties": false, "description": "exactly one of spec, toml", "properties": {
            "name": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
            "spec": {"type": "object", "description": "a VDC file as JSON: header_bytes, servers, appliances, tenants (tailbound_allocation::vdc)"},
            "toml": {"type": "string", "description": "the text of a TOML VDC file"},
            "controller": {"type": "object", "additionalProperties": false, "properties": {
                "interval_s": {"type": "number", "default": 1.0}, "global": {"type": "string", "enum": ["drf", "hdrf", "first-fit"], "default": "hdrf"},
                "estimate": {"type": "boolean", "default": true}, "demand_gain": {"type": "number", "default": 0.5},
                "link_headroom": {"type": "number", "default": 0.05}, "samples": {"type": "integer", "default": 10},
                "min_rate": {"type": "number", "default": 1e5}, "carry_s": {"type": "number", "default": 0.1}, "stale_after": {"type": "integer", "default": 3}
            }}
        }},
        "Vdc": {"type": "object", "properties": {
            "name": {"type": "string"}, "controller": {"type": "object"}, "tenants": {"type": "array", "items": {"type": "string"}},
            "flows": {"type": "integer"}, "epoch": {"type": "integer", "description": "control steps run"},
            "enforcers": {"type": "integer"}, "stale": {"type": "integer"}, "spec": {"type": "object"}
        }},
        "Vdcs": {"type": "array", "items": {"$ref": "#/components/schemas/Vdc"}},
        "ControlDatacenter": {"type": "object", "properties": {"interval_ns": {"type": "integer"}, "samples_per_interval": {"type": "integer"}, "min_rate": {"type": "number"}, "carry_s": {"type": "number"}, "datacenter": {"type": "object"}}},
        "ControlRegister": {"type": "object", "required": ["flows"], "additionalProperties": false, "properties": {"flows": {"type": "array", "items": {"type": "string", "description": "tenant/flow"}}}},
        "ControlReport": {"type": "object", "required": ["span_ns", "flows"], "additionalProperties": false, "properties": {
            "span_ns": {"type": "integer", "minimum": 1},
            "flows": {"type": "array", "items": {"type": "object", "required": ["flow", "report"], "properties": {"flow": {"type": "string"}, "report": {"type": "object", "description": "per hop: utilization, backlog, queueing, outstanding, completed; samples"}}}}
        }},
        "ControlAllocation": {"type": "object", "properties": {
            "epoch": {"type": "integer"}, "interval_ns": {"type": "integer"}, "next_step_in_ns": {"type": "integer"},
            "flows": {"type": "array", "items": {"type": "object", "properties": {"flow": {"type": "string"}, "rates": {"type": "array", "items": {"type": "number"}}}}}
        }},
        "ControlStatus": {"type": "object", "properties": {
            "epoch": {"type": "integer"}, "interval_ns": {"type": "integer"},
            "enforcers": {"type": "array", "items": {"type": "object"}}, "flows": {"type": "array", "items": {"type": "object"}},
            "resources": {"type": "array", "items": {"type": "object"}}, "violated": {"type": "array", "items": {"type": "string"}},
            "overcommitted": {"type": "array", "items": {"type": "string"}}
        }},
        "Bounds": {"type": "array", "items": {"type": "object", "properties": {"tenant": {"type": "string"}, "slo": {"type": "object"}, "priority": {"type": "integer"}, "bound_s": {"type": "number", "nullable": true}, "meets_slo": {"type": "boolean"}}}}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::ROUTES;

    #[test]
    fn every_route_is_documented_and_nothing_else() {
        let doc = document();
        let paths = doc["paths"].as_object().unwrap();
        for (method, path) in ROUTES {
            assert!(
                paths.get(*path).and_then(|p| p.get(*method)).is_some(),
                "{method} {path} is not in /openapi.json"
            );
        }
        let documented: usize = paths
            .values()
            .map(|p| {
                p.as_object()
                    .unwrap()
                    .keys()
                    .filter(|k| *k != "parameters")
                    .count()
            })
            .sum();
        assert_eq!(
            documented,
            ROUTES.len(),
            "the document lists routes the server lacks"
        );
    }

    #[test]
    fn every_reference_resolves() {
        let doc = document();
        let text = doc.to_string();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for part in text.split("#/components/schemas/").skip(1) {
            let name: String = part.chars().take_while(|c| c.is_alphanumeric()).collect();
            assert!(schemas.contains_key(&name), "unresolved $ref {name}");
        }
    }
}
