/**
 * The two encodings a frame travels in: JSON text or protobuf binary. Here, below every folder,
 * so the metrics can label by them as well as the codecs and sockets that choose them.
 */
export const FORMATS = ['json', 'proto'] as const;
export type Format = (typeof FORMATS)[number];
