export { renderUsername, TemplateError, type TemplateFields } from './username-template';
