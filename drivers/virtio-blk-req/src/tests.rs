//! Requests built here, served by a fake device that reads them as a virtio-blk device would:
//! the header from the first device-readable buffer, the data from the rest, the status into
//! the last device-writable byte.

use super::*;

const S: usize = SECTOR_SIZE;

/// A RAM disk behind the virtio-blk request layout.
struct FakeDevice {
    disk: Vec<u8>,
    /// The status the device reports for every request.
    status: Status,
    /// (type, sector, data bytes) of every request served.
    log: Vec<(RequestType, u64, usize)>,
}

impl FakeDevice {
    fn new(sectors: usize) -> FakeDevice {
        FakeDevice {
            disk: vec![0; sectors * S],
            status: Status::Ok,
            log: Vec::new(),
        }
    }

    /// Carry out one request given as the buffer lists a driver hands the queue.
    fn serve(&mut self, reads: &[&[u8]], writes: &mut [&mut [u8]]) {
        let header = RequestHeader::read_from_bytes(reads[0]).expect("16-byte header first");
        let kind = header.request_type().expect("a known type");
        let mut at = header.sector() as usize * S;
        let (status, data_in) = writes.split_last_mut().expect("a status byte last");
        assert_eq!(status.len(), 1, "the status is one byte");
        let mut bytes = 0;
        match kind {
            RequestType::Out => {
                assert!(data_in.is_empty());
                for piece in &reads[1..] {
                    self.disk[at..at + piece.len()].copy_from_slice(piece);
                    at += piece.len();
                    bytes += piece.len();
                }
            }
            RequestType::In => {
                assert_eq!(reads.len(), 1);
                for piece in data_in.iter_mut() {
                    piece.copy_from_slice(&self.disk[at..at + piece.len()]);
                    at += piece.len();
                    bytes += piece.len();
                }
            }
            RequestType::Flush | RequestType::GetId => {
                assert_eq!((reads.len(), data_in.len()), (1, 0));
            }
        }
        self.log.push((kind, header.sector(), bytes));
        status[0] = self.status as u8;
    }

    /// Submit every request and complete it: what the kernel's engine does, minus the queue.
    fn run(&mut self, requests: Vec<Request<'_>>) -> VfsResult<()> {
        let mut result = Ok(());
        for mut req in requests {
            let mut head = req.head();
            {
                let (reads, mut writes) = buffers(&mut head, &mut req.data);
                self.serve(&reads, &mut writes);
            }
            result = result.and(status_result(head.status));
        }
        result
    }
}

fn limits(sectors: u64, max_segments: usize) -> Limits {
    Limits {
        sectors,
        max_segments,
        read_only: false,
    }
}

/// (sector, piece lengths) of each request.
fn shape(requests: &[Request<'_>]) -> Vec<(u64, Vec<usize>)> {
    requests
        .iter()
        .map(|r| {
            let lens = match &r.data {
                Data::None => Vec::new(),
                Data::Out(p) => p.iter().map(|p| p.len()).collect(),
                Data::In(p) => p.iter().map(|p| p.len()).collect(),
            };
            (r.sector, lens)
        })
        .collect()
}

#[test]
fn header_is_the_virtio_layout() {
    let h = RequestHeader::new(RequestType::Out, 0x0102_0304_0506_0708);
    assert_eq!(
        h.as_bytes(),
        &[1, 0, 0, 0, 0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1][..]
    );
    assert_eq!(RequestHeader::new(RequestType::Flush, 0).as_bytes()[0], 4);
    assert_eq!(RequestHeader::new(RequestType::GetId, 0).as_bytes()[0], 8);
    assert_eq!(h.request_type(), Some(RequestType::Out));
    assert_eq!(RequestType::from_wire(3), None);
}

#[test]
fn a_long_piece_is_split_every_mib() {
    let buf = vec![0u8; 3 * MAX_REQUEST + 8 * S];
    let requests = limits(1 << 20, 126)
        .write_requests(&[(100, &[&buf[..]])])
        .unwrap();
    let per = (MAX_REQUEST / S) as u64;
    assert_eq!(
        shape(&requests),
        vec![
            (100, vec![MAX_REQUEST]),
            (100 + per, vec![MAX_REQUEST]),
            (100 + 2 * per, vec![MAX_REQUEST]),
            (100 + 3 * per, vec![8 * S]),
        ]
    );
}

#[test]
fn pieces_are_split_at_seg_max_and_cut_at_the_size_limit() {
    let four_k = vec![0u8; 4096];
    let pieces: Vec<&[u8]> = vec![&four_k; 5];
    let requests = limits(1000, 2).write_requests(&[(8, &pieces)]).unwrap();
    assert_eq!(
        shape(&requests),
        vec![
            (8, vec![4096, 4096]),
            (24, vec![4096, 4096]),
            (40, vec![4096])
        ]
    );

    // 768 KiB then 512 KiB: the second piece is cut where the first request reaches 1 MiB.
    let a = vec![0u8; 768 << 10];
    let b = vec![0u8; 512 << 10];
    let requests = limits(1 << 20, 126)
        .write_requests(&[(0, &[&a[..], &b[..]])])
        .unwrap();
    assert_eq!(
        shape(&requests),
        vec![
            (0, vec![768 << 10, 256 << 10]),
            ((MAX_REQUEST / S) as u64, vec![256 << 10])
        ]
    );
}

#[test]
fn empty_pieces_are_not_sent_and_runs_keep_their_sectors() {
    let a = vec![1u8; S];
    let empty: &[u8] = &[];
    let runs: [(u64, &[&[u8]]); 2] = [(5, &[empty, &a, empty]), (50, &[&a, &a])];
    let requests = limits(100, 126).write_requests(&runs).unwrap();
    assert_eq!(shape(&requests), vec![(5, vec![S]), (50, vec![S, S])]);
}

#[test]
fn bad_runs_build_no_request() {
    let ok = vec![0u8; S];
    let odd = vec![0u8; S + 1];
    let l = limits(16, 126);
    // One bad run among good ones: nothing is written.
    assert_eq!(
        l.write_requests(&[(0, &[&ok[..]]), (1, &[&odd[..]])])
            .unwrap_err(),
        VfsError::InvalidInput
    );
    assert_eq!(
        l.write_requests(&[(16, &[&ok[..]])]).unwrap_err(),
        VfsError::InvalidInput
    );
    assert_eq!(
        l.write_requests(&[(u64::MAX, &[&ok[..]])]).unwrap_err(),
        VfsError::InvalidInput
    );
    let read_only = Limits {
        read_only: true,
        ..l
    };
    assert_eq!(
        read_only.write_requests(&[(0, &[&ok[..]])]).unwrap_err(),
        VfsError::ReadOnly
    );
    let mut buf = vec![0u8; 2 * S];
    assert_eq!(
        l.read_requests(15, &mut [&mut buf[..]]).unwrap_err(),
        VfsError::InvalidInput
    );
}

#[test]
fn status_bytes_map_to_errors() {
    assert_eq!(status_result(Status::Ok as u8), Ok(()));
    assert_eq!(status_result(Status::IoErr as u8), Err(VfsError::Io));
    assert_eq!(status_result(Status::Unsupp as u8), Err(VfsError::Io));
    // Never written by the device: not success.
    assert_eq!(status_result(Status::NotWritten as u8), Err(VfsError::Io));
    assert_eq!(status_result(7), Err(VfsError::Io));
    assert_eq!(Status::from_byte(7), None);
}

#[test]
fn gathered_writes_read_back_through_the_fake_device() {
    let mut dev = FakeDevice::new(4096);
    let l = limits(4096, 3);
    let pieces: Vec<Vec<u8>> = (0..7u8)
        .map(|i| vec![i + 1; (i as usize + 1) * S])
        .collect();
    let refs: Vec<&[u8]> = pieces.iter().map(|p| &p[..]).collect();
    dev.run(l.write_requests(&[(10, &refs)]).unwrap()).unwrap();
    // Seven pieces at three per request: three requests, each at the sector after the last.
    assert_eq!(
        dev.log,
        vec![
            (RequestType::Out, 10, 6 * S),
            (RequestType::Out, 16, 15 * S),
            (RequestType::Out, 31, 7 * S)
        ]
    );

    let expected: Vec<u8> = pieces.concat();
    let mut back = vec![0u8; expected.len()];
    let (first, rest) = back.split_at_mut(3 * S);
    dev.run(l.read_requests(10, &mut [first, rest]).unwrap())
        .unwrap();
    assert_eq!(back, expected);
    assert_eq!(&dev.disk[..10 * S], &vec![0u8; 10 * S][..]);

    dev.run(vec![Request::flush()]).unwrap();
    assert_eq!(dev.log.last(), Some(&(RequestType::Flush, 0, 0)));
}

#[test]
fn a_failing_device_fails_the_request() {
    let mut dev = FakeDevice::new(64);
    dev.status = Status::IoErr;
    let data = vec![9u8; S];
    let requests = limits(64, 126)
        .write_requests(&[(0, &[&data[..]])])
        .unwrap();
    assert_eq!(dev.run(requests), Err(VfsError::Io));
    dev.status = Status::Unsupp;
    assert_eq!(dev.run(vec![Request::flush()]), Err(VfsError::Io));
}

#[test]
fn segments_per_request_follow_the_device() {
    assert_eq!(max_segments(Features::empty(), 5, 128), 126);
    assert_eq!(max_segments(Features::SEG_MAX, 5, 128), 5);
    assert_eq!(max_segments(Features::SEG_MAX, 0, 128), 1);
    assert_eq!(max_segments(Features::SEG_MAX, 1000, 128), 126);
}

/// The pages of a user buffer of `len` bytes that starts `skew` bytes into a page.
fn page_pieces(buf: &mut [u8], skew: usize) -> Vec<&mut [u8]> {
    let mut pieces = Vec::new();
    let (first, mut rest) = buf.split_at_mut((4096 - skew).min(buf.len()));
    pieces.push(first);
    while !rest.is_empty() {
        let (page, later) = rest.split_at_mut(rest.len().min(4096));
        pieces.push(page);
        rest = later;
    }
    pieces
}

#[test]
fn an_unaligned_buffer_is_read_in_whole_sector_requests() {
    let mut dev = FakeDevice::new(8192);
    for (i, b) in dev.disk.iter_mut().enumerate() {
        *b = (i * 7 + i / 4093) as u8;
    }
    for (max_segments, skew, len) in [
        (126, 16, MAX_REQUEST),
        (126, 4095, MAX_REQUEST + 3 * S),
        (3, 100, 20 * 4096),
        (4, 511, 9 * 4096 + S),
        (5, 1, 2 * S),
        (126, 3000, 7 * S),
    ] {
        let mut buf = vec![0u8; len];
        let mut pieces = page_pieces(&mut buf, skew);
        let requests = limits(8192, max_segments)
            .read_requests(10, &mut pieces)
            .unwrap();
        let shapes = shape(&requests);
        let mut sector = 10;
        for (at, lens) in &shapes {
            let bytes: usize = lens.iter().sum();
            assert_eq!(*at, sector, "requests follow each other: {shapes:?}");
            assert!(bytes > 0 && bytes.is_multiple_of(S) && bytes <= MAX_REQUEST);
            assert!(lens.len() <= max_segments && lens.iter().all(|&l| l > 0));
            sector += (bytes / S) as u64;
        }
        assert_eq!(sector, 10 + (len / S) as u64);
        dev.run(requests).unwrap();
        assert_eq!(
            buf,
            dev.disk[10 * S..10 * S + len],
            "skew {skew}, seg_max {max_segments}"
        );
    }
}

#[test]
fn a_piece_inside_a_run_must_be_whole_sectors() {
    let mut a = vec![0u8; S + 16];
    let mut b = [0u8; 100];
    let mut c = vec![0u8; S - 116];
    let l = limits(64, 126);
    assert_eq!(
        l.read_requests(0, &mut [&mut a[..], &mut b[..], &mut c[..]])
            .unwrap_err(),
        VfsError::InvalidInput
    );
    // Head and tail inside sectors, whole sectors in all: accepted, but not where a request
    // holds fewer than three pieces.
    let mut d = vec![0u8; S - 16];
    assert!(l.read_requests(0, &mut [&mut a[..], &mut d[..]]).is_ok());
    assert_eq!(
        limits(64, 2)
            .read_requests(0, &mut [&mut a[..], &mut d[..]])
            .unwrap_err(),
        VfsError::InvalidInput
    );
    // Not whole sectors in all.
    assert_eq!(
        l.read_requests(0, &mut [&mut a[..]]).unwrap_err(),
        VfsError::InvalidInput
    );
}
