"""The learner's AWS clients have connect and read timeouts and bounded retries (botocore's own are 60 s each,
so a wedged endpoint could hold a poll or an upload for minutes per attempt)."""

from toolrl_learner.storage.s3 import make_client


def test_every_client_gets_the_timeouts(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    for service in ("s3", "sqs"):
        cfg = make_client(service).meta.config
        assert cfg.connect_timeout == 3
        # Longer than the SQS driver's 20 s long poll, so an empty poll is never a timeout.
        assert 20 < cfg.read_timeout <= 60
        assert cfg.retries["total_max_attempts"] == 4
