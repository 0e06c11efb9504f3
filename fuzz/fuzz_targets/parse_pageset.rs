#![no_main]
use zmem_pages::{PageReader, PageSet, ReadOptions};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // Small pages so short inputs reach the page data; a cap so zstd bombs stay small.
    let opts = ReadOptions { page_size: 512, max_bytes: 16 << 20 };
    let whole = PageSet::from_bytes(data, &opts);
    // The streaming reader hands out the same pages, or fails too.
    if let Ok(mut r) = PageReader::new(data, &opts) {
        if let Ok(set) = &whole {
            assert_eq!(r.set_meta(), set.set_meta(), "streaming disagrees on set metadata");
        }
        let mut streamed = Vec::new();
        let mut ok = true;
        loop {
            match r.next_page() {
                Ok(Some(p)) => streamed.extend_from_slice(p.data),
                Ok(None) => break,
                Err(_) => {
                    ok = false;
                    break;
                }
            }
        }
        match &whole {
            Ok(set) => assert!(ok && streamed == set.bytes(), "streaming disagrees"),
            Err(_) => assert!(!ok, "streaming accepted what whole reading refused"),
        }
    }
    match whole {
        Ok(set) => {
            // Whatever parses re-encodes to a set with the same pages and metadata.
            let mut out = Vec::new();
            set.write_to(&mut out).expect("writing to a Vec");
            let back = PageSet::from_bytes(&out, &opts).expect("re-reading what was written");
            assert_eq!(back.bytes(), set.bytes());
            assert_eq!(back.metas(), set.metas());
            assert_eq!(back.set_meta(), set.set_meta());
        }
        Err(e) => {
            let named =
                e.offset().is_some() || matches!(e, zmem_pages::PagesError::TooLarge { .. });
            assert!(named, "error without an offset: {e}");
        }
    }
});
