import type { DocumentRow } from '../../../db/tables/documents.js'
import type { Document } from '../../../schemas/documents.js'

/** The API's document from a row: never its storage key. */
export function toDocument(row: DocumentRow): Document {
  return {
    id: row.id,
    patientId: row.patient_id,
    encounterId: row.encounter_id,
    title: row.title,
    category: row.category as Document['category'],
    contentType: row.content_type,
    fileName: row.file_name,
    sizeBytes: Number(row.size_bytes),
    sha256: row.sha256 ?? '',
    uploadedBy: row.uploaded_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: row.version,
  }
}
