"""The S3 blob store (boto3). With AWS_ENDPOINT_URL set (LocalStack) boto3 talks to that endpoint; the
client is created once per store. put-if-absent is S3's conditional write (If-None-Match: *)."""

from __future__ import annotations

import os
from pathlib import Path

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from .base import BlobNotFound, check_key

_MISSING = {"NoSuchKey", "404", "NotFound"}
_CONDITION_FAILED = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}


# Connect and read timeouts (botocore's defaults are 60 s each, retried): an endpoint that accepts and never
# answers fails a call in about a minute, not never. The read timeout is per socket read, so it outlasts the
# SQS driver's 20 s long poll and a large object that keeps streaming.
CLIENT_CONFIG = Config(
    connect_timeout=3, read_timeout=40, retries={"mode": "standard", "total_max_attempts": 4}
)


def make_client(service: str):
    """A boto3 client honouring AWS_ENDPOINT_URL (also set explicitly for older botocore versions)."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL") or None
    return boto3.client(service, endpoint_url=endpoint, config=CLIENT_CONFIG)


class S3BlobStore:
    def __init__(self, bucket: str, prefix: str = "", client=None) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.client = client or make_client("s3")
        self.describe = f"s3://{bucket}/{self.prefix}"

    def _k(self, key: str) -> str:
        return self.prefix + check_key(key)

    def local_path(self, key: str) -> None:
        return None

    def get_bytes(self, key: str) -> bytes:
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self._k(key))["Body"].read()
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in _MISSING:
                raise BlobNotFound(key) from None
            raise

    def put_bytes(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self._k(key), Body=data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._k(key), Body=data, IfNoneMatch="*")
            return True
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in _CONDITION_FAILED:
                return False
            raise

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._k(key))
            return True
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in _MISSING:
                return False
            raise

    def list(self, prefix: str) -> list[str]:
        out = []
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix):
            out.extend(o["Key"][len(self.prefix) :] for o in page.get("Contents", []))
        return sorted(out)

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._k(key))

    def put_file(self, key: str, path: Path) -> None:
        self.client.upload_file(str(path), self.bucket, self._k(key))

    def get_file(self, key: str, path: Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            self.client.download_file(self.bucket, self._k(key), str(path))
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in _MISSING:
                raise BlobNotFound(key) from None
            raise
