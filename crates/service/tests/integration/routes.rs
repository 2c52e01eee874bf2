//! `/openapi.json` against the real router: every documented route exists on the server, and
//! the open routes answer without a token.

use crate::common::{Server, ADMIN};
use bytes::Bytes;
use hyper::Method;
use serde_json::Value;
use tailbound_service::server::ROUTES;
use tailbound_service::Config;

#[tokio::test]
async fn every_route_in_the_openapi_document_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("s.db"), Config::default()).await;
    let open = s.client(None);
    let (_, doc): (u16, Value) = open
        .call(Method::GET, "/openapi.json", None::<&()>)
        .await
        .unwrap();
    let paths = doc["paths"].as_object().unwrap();
    let mut documented = 0;
    for (path, ops) in paths {
        for method in ops
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| *k != "parameters")
        {
            documented += 1;
            assert!(
                ROUTES.contains(&(method.as_str(), path.as_str())),
                "{method} {path}"
            );
            let m: Method = method.to_uppercase().parse().unwrap();
            let url = ["{name}", "{host}", "{vdc}", "{id}"]
                .iter()
                .fold(path.clone(), |p, k| p.replace(k, "nobody"));
            let a = s
                .admin()
                .raw(
                    m.clone(),
                    &url,
                    Some("application/json"),
                    Bytes::from_static(b"{}"),
                )
                .await
                .unwrap();
            // a route that exists answers anything but "no such route" and "wrong method"
            let body = String::from_utf8_lossy(&a.body);
            assert!(
                a.status != 405 && !body.contains("no route"),
                "{m} {url}: {} {body}",
                a.status
            );
        }
    }
    assert_eq!(documented, ROUTES.len());
    let a = open
        .raw(Method::GET, "/metrics", None, Bytes::new())
        .await
        .unwrap();
    assert_eq!(a.status, 200);
    assert!(String::from_utf8_lossy(&a.body).contains("tailbound_admitted_tenants 0"));
    let a = open
        .raw(Method::GET, "/healthz", None, Bytes::new())
        .await
        .unwrap();
    assert_eq!(a.status, 200);
    let _ = ADMIN;
}
