//! Rotation and data at rest: new data sealed under the new key, old data still readable, no
//! plaintext in the database files.

use super::*;

#[tokio::test]
async fn rotation_seals_new_data_under_the_new_key_and_old_data_stays_readable() {
    let (t, kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    let dep = desk(&t).await;
    let base = deployment_cohorts(&dep);
    let a = upload_and_wait(&t, &base, "Before", CSV_A).await;

    let (s, rotated) = t.post(&admin_path("/rotate"), &json!({})).await;
    assert_eq!(s, StatusCode::OK, "{rotated}");
    insta::assert_json_snapshot!("byok_rotate", rotated, {".key_id" => "[id]"});
    assert_eq!(kms.count(Endpoint::RotateKey), 1);
    let rotate_call = &kms.entries(Endpoint::RotateKey)[0];
    assert_eq!(rotate_call.key_alias.as_deref(), Some("tenant-a"));
    assert!(
        !rotated.to_string().contains("plaintext"),
        "no key material"
    );

    let b = upload_and_wait(&t, &base, "After", CSV_B).await;
    let (s, list) = t.get(&admin_path("")).await;
    assert_eq!(s, StatusCode::OK);
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{list}");
    let (old_id, new_id) = (
        items[0]["key_id"].as_u64().unwrap() as u32,
        items[1]["key_id"].as_u64().unwrap() as u32,
    );
    assert_eq!(items[0]["active"], false);
    assert_eq!(items[1]["active"], true);
    assert_eq!(rotated["key_id"], items[1]["key_id"]);
    assert!(
        items
            .iter()
            .all(|k| k["provider"] == "byok" && k["key_alias"] == "tenant-a")
    );
    assert_eq!(sealed_with(&t, &a).await, [old_id, old_id]);
    assert_eq!(
        sealed_with(&t, &b).await,
        [new_id],
        "new data under the new key"
    );

    // Both cohorts stay readable, also once every key has expired and is decrypted again.
    for round in 0..2 {
        assert_eq!(cohort_file(&t, &base, &a).await, CSV_A);
        assert_eq!(cohort_file(&t, &base, &b).await, CSV_B);
        let ann = inbound(&t, "+12025550143", DESK).await;
        assert_eq!(ann["cohort_id"], a.as_str(), "round {round}: {ann}");
        assert_eq!(ann["user_identifier"], "a1");
        assert_eq!(ann["agent_variables"]["plan"], "gold");
        let bo = inbound(&t, "+13125550145", DESK).await;
        assert_eq!(bo["cohort_id"], b.as_str(), "{bo}");
        assert_eq!(bo["agent_variables"]["plan"], "bronze");
        t.clock.advance(Duration::seconds(300)).unwrap();
    }
    let decrypts = kms.entries(Endpoint::DecryptKey);
    // Adoption, the check of the rotated key, then both keys after the expiry.
    assert_eq!(decrypts.len(), 4, "{decrypts:?}");
}

#[tokio::test]
async fn a_rotation_period_rotates_on_the_simulated_clock() {
    let (t, kms) = byok_app(Method::StaticKey, |e| e.rotation_period_secs = Some(3600)).await;
    outbound_ok(&t).await;
    t.clock.advance(Duration::seconds(3599)).unwrap();
    outbound_ok(&t).await;
    assert_eq!(kms.count(Endpoint::RotateKey), 0);
    t.clock.advance(Duration::seconds(1)).unwrap();
    outbound_ok(&t).await;
    assert_eq!(kms.count(Endpoint::RotateKey), 1);
    let (_, list) = t.get(&admin_path("")).await;
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[1]["created_at"], format_instant(now(&t)));
    t.clock.advance(Duration::seconds(3600)).unwrap();
    outbound_ok(&t).await;
    assert_eq!(kms.count(Endpoint::RotateKey), 2);
}

#[tokio::test]
async fn no_plaintext_phone_number_reaches_the_database_files() {
    let (t, _kms) = byok_app(Method::ClientCredentials, |_| {}).await;
    let dep = desk(&t).await;
    let base = deployment_cohorts(&dep);
    upload_and_wait(&t, &base, "Numbers", CSV_A).await;
    let csv_b = "phone,id,plan\n(312) 555-0145,b1,bronze\n312.555.0146,b2,bronze\n";
    upload_and_wait(&t, &base, "National", csv_b).await;
    let bytes = database_bytes(&t);
    assert!(bytes.len() > 4096, "the database files were read");
    for needle in [
        "+12025550143",
        "2025550143",
        "+12025550144",
        "2025550144",
        "+13125550145",
        "3125550145",
        "(312) 555-0145",
        "312.555.0146",
        "3125550146",
        "silver",
        "bronze",
    ] {
        assert!(!contains(&bytes, needle), "{needle} on disk");
    }
    let key_b64 = STANDARD.encode(DATA_KEY);
    assert!(!contains(&bytes, &key_b64), "no plaintext data key on disk");
    assert!(
        !bytes.windows(DATA_KEY.len()).any(|w| w == DATA_KEY),
        "no raw data key on disk"
    );
}
