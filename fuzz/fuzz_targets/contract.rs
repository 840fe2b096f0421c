#![no_main]
//! Contract parse and repair: any text a model can answer with gives a result or a contract
//! error, never a panic; a strict parse that succeeds is what the repair gives too.

use libfuzzer_sys::fuzz_target;
use outrider::api::{answer_text, ExploreResult, VerificationMeta, VerificationResult};
use outrider::api::Json;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = answer_text(Some(data), "ExploreResult") else {
        return;
    };
    let strict = ExploreResult::from_json(&raw, Default::default(), "completed");
    let repaired = ExploreResult::repair(&raw, Default::default(), "completed");
    if let Ok(result) = &strict {
        let (again, how) = repaired
            .as_ref()
            .expect("repair refused what the strict parse took");
        assert_eq!((result, how), (again, &None));
        let value = result.to_value();
        let back = ExploreResult::from_dict(&Json::from_value(&value)).expect("its own dict");
        assert_eq!(&back, result);
    }
    for e in [strict.err(), repaired.err()].into_iter().flatten() {
        let _ = e.to_string();
    }
    let strict = VerificationResult::from_json(&raw, VerificationMeta::default());
    let repaired = VerificationResult::repair(&raw, VerificationMeta::default());
    if let Ok(result) = &strict {
        let (again, how) = repaired
            .as_ref()
            .expect("repair refused what the strict parse took");
        assert_eq!((result, how), (again, &None));
    }
});
