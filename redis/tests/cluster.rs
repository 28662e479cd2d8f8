//! On a Redis Cluster (three primaries the test starts): every key of a limiter carries one hash
//! tag, so each script call runs on the node holding it, without `CROSSSLOT`, and the script is
//! loaded on each node the first time that node is asked.

mod support;

use std::time::Duration;

use redis::cluster::ClusterClient;
use ritmo_core::{Config, Reason};
use ritmo_redis::Source;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limiters_on_a_cluster() {
    let Some(nodes) = support::Server::start_cluster() else {
        return;
    };
    let client = ClusterClient::new(nodes.iter().map(|n| n.url()).collect::<Vec<_>>()).unwrap();
    let conn = client.get_async_connection().await.unwrap();
    let config = Config::new(3, Duration::from_secs(100)).unwrap();

    // Limiters whose tags land on different nodes.
    let ids = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let mut slots = std::collections::BTreeSet::new();
    for id in ids {
        let keyed: ritmo_redis::RedisKeyedRateLimiter<str, _> = ritmo_redis::builder(id, config)
            .timeout(Duration::from_secs(2))
            .connect_keyed_with(conn.clone())
            .unwrap();
        for user in ["alice", "bob"] {
            for _ in 0..3 {
                let p = keyed.try_acquire(user).await.unwrap();
                assert_eq!(p.source(), Source::Store);
            }
            let err = keyed.try_acquire(user).await.unwrap_err();
            assert_eq!(err.reason(), Reason::NoPermitInTime, "{id}/{user}: {err}");
            assert_eq!(keyed.available_permits(user).await.unwrap(), 0);
        }
        let r = keyed
            .reserve_n_within("carol", 3, Duration::ZERO)
            .await
            .unwrap();
        assert!(r.cancel().await);
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("{{ritmo:{id}}}:alice"))
            .query(&mut nodes[0].conn())
            .unwrap();
        slots.insert(slot / (16384 / 3 + 1));
    }
    assert!(slots.len() > 1, "the ids spread over several nodes");
    // One quota, too.
    let one = ritmo_redis::builder("one", config)
        .connect_with(conn.clone())
        .unwrap();
    one.try_acquire_n(3).await.unwrap();
    assert!(one.try_acquire().await.is_err());
}
