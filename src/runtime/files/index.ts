// The public entry `flash-worker/files`: a handler's file helpers (download, upload to a bucket, the model cache).
// A subpath of its own, as runpod-python keeps them in serverless.utils: most workers never move a file.
export { DownloadError, type DownloadedFile, type DownloadOptions, download } from "./download.js";
export {
  CachedModelError,
  type CachedModelOptions,
  cachedModelPath,
  modelCachePath,
  volumePath,
} from "./models.js";
export {
  hasBucket,
  type UploadData,
  UploadError,
  type UploadedFile,
  type UploadOptions,
  upload,
} from "./upload.js";
