"""Old policy versions deleted in a real bucket (LocalStack's S3, through the learner's S3BlobStore), as
test_retention.py checks on folders: after a deterministic run only the needed versions remain, each whole (later
versions read the graph from v0's folder, which is kept), and a run killed after its checkpoint replays the
versions whose weights were deleted, ending with the weights of a run never killed.

Runs where LocalStack is: `scripts/e2e.sh` exports AWS_ENDPOINT_URL (skipped in the CPU suite otherwise)."""

import os
import uuid

import pytest
import test_retention as folder_tests
import torch

from toolrl_learner.storage.s3 import S3BlobStore

pytestmark = pytest.mark.skipif(
    not os.environ.get("AWS_ENDPOINT_URL"), reason="needs LocalStack (scripts/e2e.sh)"
)
tiny = folder_tests.tiny  # the module's fixture


@pytest.fixture()
def bucket():
    import boto3

    for k, v in (
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        os.environ.setdefault(k, v)
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    name = f"toolrl-retention-test-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=name)
    yield name
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
        for obj in page.get("Contents", []):
            s3.delete_object(Bucket=name, Key=obj["Key"])
    s3.delete_bucket(Bucket=name)


def test_a_run_on_s3_keeps_only_the_needed_versions_each_whole(tmp_path, tiny, bucket):
    model_dir, vocab = tiny
    store = S3BlobStore(bucket)
    config = folder_tests._config(model_dir, save_every=4, eval_every=5)
    s = folder_tests._start(store, tmp_path / "work", config)
    folder_tests._offer(s, vocab, range(folder_tests.STEPS * folder_tests.BATCH))
    assert s.done

    present = folder_tests._versions(store)
    assert sorted(present) == [0, 4, 5, 8, 9, 10]
    for v in present:
        folder_tests._assert_whole(store, v)
    assert present[10] == {"manifest.json", "model.onnx.data"}  # the rest is read from v0's folder


def test_a_deterministic_resume_on_s3_replays_versions_whose_weights_were_deleted(tmp_path, tiny, bucket):
    model_dir, vocab = tiny
    config = folder_tests._config(model_dir, save_every=5)
    n = folder_tests.BATCH
    straight = folder_tests._start(folder_tests._store(tmp_path / "straight", True), tmp_path / "w0", config)
    folder_tests._offer(straight, vocab, range(folder_tests.STEPS * n))

    # GIVEN a learner killed after step 9 (checkpoint at step 5): v6 is left with its manifest only
    store = S3BlobStore(bucket)
    folder_tests._offer(folder_tests._start(store, tmp_path / "w1", config), vocab, range(9 * n))
    assert folder_tests._versions(store)[6] == {"manifest.json"}

    # WHEN a learner on another machine resumes
    events: list[dict] = []
    s = folder_tests._start(store, tmp_path / "w2", config, events)
    folder_tests._offer(s, vocab, range(5 * n, folder_tests.STEPS * n))

    # THEN it replayed v6-v9, published v10 only, and has the straight run's weights
    assert s.done and [e["version"] for e in events if e["type"] == "published"] == [10]
    wa, wb = folder_tests._weights(straight), folder_tests._weights(s)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert sorted(folder_tests._versions(store)) == [0, 5, 8, 9, 10]
