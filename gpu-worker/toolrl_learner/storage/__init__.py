"""The learner's blob store: a local folder (embedded mode) or S3 (LocalStack, AWS), behind one small
interface with the conditional write the pipeline needs (put-if-absent)."""

from __future__ import annotations

from .base import BlobNotFound, BlobStore, check_key
from .folder import FolderBlobStore


def open_store(root: str) -> BlobStore:
    """`s3://bucket[/prefix]` -> S3 (boto3; honours AWS_ENDPOINT_URL), anything else -> a local folder."""
    if root.startswith("s3://"):
        from .s3 import S3BlobStore

        bucket, _, prefix = root.removeprefix("s3://").partition("/")
        return S3BlobStore(bucket, prefix)
    return FolderBlobStore(root)


__all__ = ["BlobNotFound", "BlobStore", "FolderBlobStore", "check_key", "open_store"]
