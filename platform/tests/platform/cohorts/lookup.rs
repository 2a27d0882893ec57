//! The store functions inbound routing uses: a caller found in the latest cohort of a
//! deployment.

use super::*;

#[tokio::test]
async fn callers_are_found_in_the_latest_cohort_of_a_deployment() {
    let t = spawn_app().await;
    let dep = create_deployment(&t, "Desk", "+14155559999").await;
    let other = create_deployment(&t, "Other", "+14155559998").await;
    let base = deployment_cohorts(&dep);
    let first = upload_ok(&t, &base, "First", USERS).await;
    wait_done(&t, &base, &first).await;
    let csv = "phone,id,first_name,plan,greeting\n+14155550100,newer,Ann,platinum,\n";
    let second = upload_ok(&t, &base, "Second", csv).await;
    wait_done(&t, &base, &second).await;
    // A stop file and another deployment's cohort do not count.
    let (s, _) = t
        .post(&format!("{base}/stream"), &json!({"name": "Stop", "cohort_category": "stop_file", "users": [{"phone_number": "+14155550100", "user_identifier": "stop"}]}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = t
        .post(&format!("{}/stream", deployment_cohorts(&other)), &json!({"name": "Other", "users": [{"phone_number": "+14155550101", "user_identifier": "elsewhere"}]}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let keys = t.app.keys.workspace(&ws(), None).await.unwrap();
    let lookup = |number: &str| {
        let (dep, hash, store) = (dep.clone(), keys.lookup_hash(number), t.app.store.clone());
        async move {
            store
                .read(move |c| cohort_store::latest_deployment_user(c, &ws(), &dep, &hash))
                .await
                .unwrap()
        }
    };
    let found = lookup("+14155550100").await.unwrap();
    assert_eq!(found.cohort_id, second);
    assert_eq!(
        found.open(&keys).unwrap().user_identifier.as_deref(),
        Some("newer")
    );
    let found = lookup("+14155550101").await.unwrap();
    assert_eq!(found.cohort_id, first);
    assert_eq!(
        found.open(&keys).unwrap().user_identifier.as_deref(),
        Some("u2")
    );
    assert!(
        lookup("+14155550102").await.is_none(),
        "a rejected row is no user"
    );
    // Another workspace's hash of the same number finds nothing.
    let bob = t
        .app
        .keys
        .workspace(&WorkspaceRef::new(ORG, WS2), None)
        .await
        .unwrap();
    let (dep2, hash) = (dep.clone(), bob.lookup_hash("+14155550100"));
    let none = t
        .app
        .store
        .read(move |c| {
            cohort_store::latest_deployment_user(c, &WorkspaceRef::new(ORG, WS2), &dep2, &hash)
        })
        .await
        .unwrap();
    assert!(none.is_none());
    let completed = t
        .app
        .store
        .read(move |c| {
            cohort_store::completed_cohorts(
                c,
                &cohort_store::Parent::deployment(dep.clone()),
                contracts::wire::CohortCategory::Cohort,
            )
        })
        .await
        .unwrap();
    assert_eq!(
        completed.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        [first, second]
    );
}
